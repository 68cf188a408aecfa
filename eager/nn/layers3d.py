"""The 3-d layers, over (N, C, D, H, W) input (or unbatched (C, D, H, W)): convolution,
pooling, batch and instance norm, channel dropout and padding, as torch.nn names them. Each
is its 1-d / 2-d sibling (layers.py, basic.py) with three spatial dims and the 3-d
functional form (extra_conv3d.py, F.pad, F.dropout3d).

>>> from dualgrad import eager
>>> from dualgrad.eager import nn
>>> net = nn.Sequential(nn.Conv3d(2, 4, 3, padding=1), nn.BatchNorm3d(4), nn.MaxPool3d(2))
>>> net(eager.randn(1, 2, 4, 4, 4)).shape
(1, 4, 2, 2, 2)
"""
from __future__ import annotations

from .basic import Dropout, _BatchNorm
from .layers import (AdaptiveAvgPool2d, AdaptiveMaxPool2d, AvgPool2d, CircularPad2d,
                     ConstantPad2d, ConvTranspose2d, InstanceNorm2d, MaxPool2d, ReflectionPad2d,
                     ReplicationPad2d, ZeroPad2d, _ConvNd)
from . import functional as F


class Conv3d(_ConvNd):
    """3-d convolution over (N, C, D, H, W), weight (out, in / groups, kd, kh, kw)."""
    _nd = 3

    def forward(self, input):  # noqa: A002 - torch's argument name
        s, _, d = self._args()
        input, p = self._padded(input)  # noqa: A001
        return F.conv3d(input, self.weight, self.bias, s, p, d, self.groups)


class ConvTranspose3d(ConvTranspose2d):
    """The adjoint of Conv3d, weight (in, out / groups, kd, kh, kw)."""
    _nd = 3


class MaxPool3d(MaxPool2d):
    _fn, _nd = staticmethod(F.max_pool3d), 3


class AvgPool3d(AvgPool2d):
    def forward(self, input):  # noqa: A002
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(AdaptiveAvgPool2d):
    _fn = staticmethod(F.adaptive_avg_pool3d)


class AdaptiveMaxPool3d(AdaptiveMaxPool2d):
    _fn = staticmethod(F.adaptive_max_pool3d)


class BatchNorm3d(_BatchNorm):
    """Batch norm of (N, C, D, H, W) input over N, D, H and W, per channel."""
    _ndims = (5,)


class InstanceNorm3d(InstanceNorm2d):
    """Each channel of each sample normalised over its own D, H, W."""
    _ndims = (4, 5)


class Dropout3d(Dropout):
    """Zeroes whole channels (dim 1) of (N, C, D, H, W) input (dim 0 of unbatched input)."""

    def forward(self, input):  # noqa: A002
        return F.dropout3d(input, self.p, self.training, self.inplace)


class ConstantPad3d(ConstantPad2d):
    """Pad the last three dims by (left, right, top, bottom, front, back) with value."""
    _n = 6


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    extra_repr = ZeroPad2d.extra_repr


class ReflectionPad3d(ReflectionPad2d):
    _n = 6


class ReplicationPad3d(ReplicationPad2d):
    _n = 6


class CircularPad3d(CircularPad2d):
    _n = 6

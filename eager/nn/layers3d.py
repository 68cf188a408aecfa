"""The 3-d layers, over (N, C, D, H, W) input (or unbatched (C, D, H, W)): convolution,
pooling, batch and instance norm, channel dropout and padding, as torch.nn names them. Each
is its 1-d / 2-d sibling (layers.py, basic.py) with three spatial dims and the 3-d
functional form (extra_conv3d.py, F.pad, F.dropout3d).

>>> from dualgrad import eager
>>> from dualgrad.eager import nn
>>> net = nn.Sequential(nn.Conv3d(2, 4, 3, padding=1), nn.BatchNorm3d(4), nn.MaxPool3d(2))
>>> net(eager.randn(1, 2, 4, 4, 4)).shape
torch.Size([1, 4, 2, 2, 2])
"""
from __future__ import annotations

from .basic import _BatchNorm, _DropoutNd
from .layers import (_AdaptiveAvgPoolNd, _AdaptiveMaxPoolNd, _AvgPoolNd, _CircularPadNd,
                     _ConstantPadNd, _ConvNd, _ConvTransposeNd, _InstanceNorm, _MaxPoolNd,
                     _ReflectionPadNd, _ReplicationPadNd, _Zeros)
from . import functional as F


class Conv3d(_ConvNd):
    """3-d convolution over (N, C, D, H, W), weight (out, in / groups, kd, kh, kw)."""
    _nd, _fn = 3, staticmethod(F.conv3d)


class ConvTranspose3d(_ConvTransposeNd):
    """The adjoint of Conv3d, weight (in, out / groups, kd, kh, kw)."""
    _nd, _fn = 3, staticmethod(F.conv_transpose3d)


class MaxPool3d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool3d)


class AvgPool3d(_AvgPoolNd):
    _fn = staticmethod(F.avg_pool3d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    _fn = staticmethod(F.adaptive_avg_pool3d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    _fn = staticmethod(F.adaptive_max_pool3d)


class BatchNorm3d(_BatchNorm):
    """Batch norm of (N, C, D, H, W) input over N, D, H and W, per channel."""
    _ndims = (5,)


class InstanceNorm3d(_InstanceNorm):
    """Each channel of each sample normalised over its own D, H, W."""
    _ndims = (4, 5)


class Dropout3d(_DropoutNd):
    """Zeroes whole channels (dim 1) of (N, C, D, H, W) input (dim 0 of unbatched input)."""
    _fn = staticmethod(F.dropout3d)


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dims by (left, right, top, bottom, front, back) with value."""
    _n = 6


class ZeroPad3d(_Zeros, ConstantPad3d):
    pass


class ReflectionPad3d(_ReflectionPadNd):
    _n = 6


class ReplicationPad3d(_ReplicationPadNd):
    _n = 6


class CircularPad3d(_CircularPadNd):
    _n = 6

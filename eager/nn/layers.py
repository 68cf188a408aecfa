"""Convolution, pooling, normalisation, resampling and padding modules, as torch.nn names
them; each holds its options and calls its functional form.

>>> from dualgrad import eager
>>> from dualgrad.eager import nn
>>> net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, groups=1), nn.ReLU(inplace=True),
...                     nn.AdaptiveAvgPool2d(1), nn.Flatten())
>>> net(eager.randn(2, 3, 8, 8)).shape
torch.Size([2, 8])
"""
from __future__ import annotations

import math

import numpy as np

from dualgrad import ops
from ..core import Tensor
from .basic import RNNCellBase, _DropoutNd, _NormBase
from .module import Module, Parameter, _float, _redraw, _uniform, factory_kwargs
from . import functional as F


def _ntuple(v, n):
    return (int(v),) * n if np.ndim(v) == 0 else tuple(int(a) for a in v)


# -- convolution -------------------------------------------------------------------------------
_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """Every convolution module's base, as torch's: the options, torch's init, extra_repr,
    and (for Conv1d/2d/3d) the forward through the functional form `_fn`; ConvTranspose*d
    derive from _ConvTransposeNd below."""
    _nd, _transposed, _fn = 2, False, None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None, output_padding=0):
        super().__init__()
        name = type(self).__name__
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {{'reflect', 'replicate', "
                             f"'circular', 'zeros'}}, but got padding_mode={padding_mode!r}")
        if self._transposed and padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {name}')
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels and out_channels must be divisible by "
                             f"groups ({in_channels}, {out_channels}, groups={groups})")
        n = self._nd
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                             f"{{'valid', 'same'}}")
        if padding == "same" and any(s != 1 for s in _ntuple(stride, n)):
            raise ValueError("padding='same' is not supported for strided convolutions")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride = _ntuple(kernel_size, n), _ntuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.dilation, self.output_padding = _ntuple(dilation, n), _ntuple(output_padding, n)
        self.padding_mode, self.transposed = padding_mode, self._transposed
        shape = ((in_channels, out_channels // groups) if self._transposed
                 else (out_channels, in_channels // groups)) + self.kernel_size
        self.weight = Parameter(np.empty(shape, _float()))
        self.bias = Parameter(np.empty(out_channels, _float())) if bias else None
        self.reset_parameters()
        factory_kwargs(self, device, dtype)

    def reset_parameters(self):
        """Draw weight and bias anew, in place: torch's kaiming_uniform(a=sqrt(5)) of the
        weight and its bias bound, both 1/sqrt(fan_in)."""
        fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
        _redraw((self.weight, self.bias), 1.0 / math.sqrt(fan_in) if fan_in else 0.0)

    def _args(self):
        # NOTE: a 1-d layer given 2-tuples passes them on, for F.conv1d to refuse as torch's
        one = (lambda v: v if isinstance(v, str) or len(v) != 1 else v[0]) \
            if self._nd == 1 else (lambda v: v)
        return (one(self.stride), one(self.padding), one(self.dilation))

    def _padded(self, input):  # noqa: A002
        """(input, padding for the convolution): with a padding_mode other than zeros, the
        input padded by F.pad in that mode and no padding left for the convolution, as
        torch's modules do (padding='same' split as torch splits it, the extra on the
        right)."""
        if self.padding_mode == "zeros":
            return input, self._args()[1]
        if self.padding == "same":
            pairs = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                     for d, k in zip(self.dilation, self.kernel_size)]
        else:
            pairs = [(0, 0)] * self._nd if self.padding == "valid" else \
                [(p, p) for p in self.padding]
        flat = [v for pair in reversed(pairs) for v in pair]
        return F.pad(input, flat, mode=self.padding_mode), 0

    def forward(self, input):  # noqa: A002 - torch's argument name
        s, _, d = self._args()
        input, p = self._padded(input)  # noqa: A001
        return type(self)._fn(input, self.weight, self.bias, s, p, d, self.groups)

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * self._nd:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._nd:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        s += "" if self.bias is not None else ", bias=False"
        return s + ("" if self.padding_mode == "zeros" else f", padding_mode={self.padding_mode}")


class Conv2d(_ConvNd):
    """2-d convolution over (N, C, H, W), weight (out, in / groups, kh, kw), torch's init."""
    _fn = staticmethod(F.conv2d)


class Conv1d(_ConvNd):
    """1-d convolution over (N, C, L), weight (out, in / groups, k)."""
    _nd, _fn = 1, staticmethod(F.conv1d)


class _ConvTransposeNd(_ConvNd):
    """The adjoint of a convolution (a "deconvolution"), weight (in, out / groups, *k)."""
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype, output_padding)

    def forward(self, input, output_size=None):  # noqa: A002
        if output_size is not None:
            raise NotImplementedError(f"{type(self).__name__}.forward(output_size=) is not "
                                      f"supported by dualgrad; set output_padding instead")
        s, p, d = self._args()
        op = self.output_padding if self._nd > 1 else self.output_padding[0]
        return type(self)._fn(input, self.weight, self.bias, s, p, op, self.groups, d)


class ConvTranspose2d(_ConvTransposeNd):
    """The adjoint of Conv2d, weight (in, out / groups, kh, kw)."""
    _fn = staticmethod(F.conv_transpose2d)


class ConvTranspose1d(_ConvTransposeNd):
    _nd, _fn = 1, staticmethod(F.conv_transpose1d)


# -- pooling -----------------------------------------------------------------------------------
# NOTE: each family has a private base, as torch's (_MaxPoolNd, ...): the 1-d, 2-d and 3-d
# classes are siblings, so `isinstance(m, nn.MaxPool2d)` is False for a MaxPool1d, as in torch
class _MaxPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None \
            else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):  # noqa: A002
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding,
                              self.dilation, self.ceil_mode, self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool2d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool2d)


class MaxPool1d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool1d)


class _AvgPoolNd(Module):
    """AvgPool2d/3d's options (AvgPool1d takes no divisor_override and keeps 1-tuples)."""
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None \
            else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):  # noqa: A002
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding,
                              self.ceil_mode, self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    _fn = staticmethod(F.avg_pool2d)


class AvgPool1d(_AvgPoolNd):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        # NOTE: torch's AvgPool1d keeps 1-tuples (its repr prints them), unlike MaxPool1d,
        # and has no divisor_override
        super().__init__(_ntuple(kernel_size, 1),
                         _ntuple(stride if stride is not None else kernel_size, 1),
                         _ntuple(padding, 1), ceil_mode, count_include_pad)
        del self.divisor_override

    def forward(self, input):  # noqa: A002
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class _AdaptiveAvgPoolNd(Module):
    """Average over output_size nearly equal regions (1 gives global average pooling)."""
    _fn = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):  # noqa: A002
        return type(self)._fn(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    _fn = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    _fn = staticmethod(F.adaptive_avg_pool1d)


class _AdaptiveMaxPoolNd(Module):
    _fn = None

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input):  # noqa: A002
        return type(self)._fn(input, self.output_size, self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    _fn = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    _fn = staticmethod(F.adaptive_max_pool1d)


# -- normalisation and dropout -----------------------------------------------------------------
class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = (num_groups, num_channels,
                                                                     eps, affine)
        self.weight = Parameter(np.ones(num_channels, _float())) if affine else None
        self.bias = Parameter(np.zeros(num_channels, _float())) if affine and bias else None
        factory_kwargs(self, device, dtype)

    def reset_parameters(self):
        """The weight back to ones and the bias to zeros, in place."""
        if self.weight is not None:
            self.weight._array[...] = 1
        if self.bias is not None:
            self.bias._array[...] = 0

    def forward(self, input):  # noqa: A002
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _InstanceNorm(_NormBase):
    """Each channel of each sample normalised over its own spatial dims. track_running_stats=
    True keeps running_mean / running_var (the batch's average instance statistics, updated in
    training) and normalises with them in eval mode, as torch (num_batches_tracked stays 0
    and momentum=None means 0, as in torch's instance norm)."""
    _ndims = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def forward(self, input):  # noqa: A002
        if input.ndim not in self._ndims:
            raise ValueError(f"{type(self).__name__}: expected {self._ndims[1]}-d input (or "
                             f"{self._ndims[0]}-d unbatched), got {tuple(input.shape)}")
        unbatched = input.ndim == self._ndims[0]
        x = ops.expand_dims(input, axis=0) if unbatched else input
        y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            self.training or not self.track_running_stats,
                            0.0 if self.momentum is None else self.momentum, self.eps)
        return ops.squeeze(y, axis=0) if unbatched else y


class InstanceNorm2d(_InstanceNorm):
    _ndims = (3, 4)


class InstanceNorm1d(_InstanceNorm):
    _ndims = (2, 3)


class Dropout2d(_DropoutNd):
    """Zeroes whole channels (dim 1) of (N, C, H, W) input."""
    _fn = staticmethod(F.dropout2d)


class Dropout1d(_DropoutNd):
    _fn = staticmethod(F.dropout1d)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU's self-normalisation: dropped elements take SELU's negative
    saturation, and an affine map restores the mean and variance (torch passes no inplace)."""
    _fn = staticmethod(F.alpha_dropout)

    def forward(self, input):  # noqa: A002
        return type(self)._fn(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """AlphaDropout of whole channels (dim 1)."""
    _fn = staticmethod(F.feature_alpha_dropout)
    forward = AlphaDropout.forward


class LocalResponseNorm(Module):
    """x / (k + alpha / size * sum of x^2 over `size` neighbouring channels) ** beta."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):  # noqa: A002
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class ChannelShuffle(Module):
    """The channels (dim 1) as a (groups, C / groups) grid, read out transposed."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):  # noqa: A002
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


# -- reshaping, resampling, padding, distances -------------------------------------------------
class Unflatten(Module):
    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):  # noqa: A002
        shape = tuple(input.shape)
        d = self.dim % len(shape)
        return input.reshape(shape[:d] + self.unflattened_size + shape[d + 1:])

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Upsample(Module):
    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        # NOTE: torch keeps a scale factor as float (its repr prints 2.0)
        if isinstance(scale_factor, (tuple, list)):
            scale_factor = tuple(float(f) for f in scale_factor)
        elif scale_factor:
            scale_factor = float(scale_factor)
        self.name = type(self).__name__
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, input):  # noqa: A002
        return F.interpolate(input, self.size, self.scale_factor, self.mode,
                             self.align_corners, self.recompute_scale_factor)

    def extra_repr(self):
        # NOTE: torch's order: scale_factor when given (with size too, forward then raises)
        what = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else \
            f"size={self.size!r}"
        return f"{what}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):  # noqa: A002
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class _LPPoolNd(Module):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = (norm_type, kernel_size,
                                                                         stride, ceil_mode)

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """Power-average pooling, (sum of x ** p over each window) ** (1 / p), over (N, C, L)."""

    def forward(self, input):  # noqa: A002
        return F.lp_pool1d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """Power-average pooling over (N, C, H, W)."""

    def forward(self, input):  # noqa: A002
        return F.lp_pool2d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class Unfold(Module):
    """im2col as a module: F.unfold with the constructor's geometry."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = (kernel_size, dilation,
                                                                      padding, stride)

    def forward(self, input):  # noqa: A002
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """col2im as a module: F.fold into output_size with the constructor's geometry."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):  # noqa: A002
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):  # noqa: A002
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class _ConstantPadNd(Module):
    """Pad the last dims by (left, right, top, bottom, ...) (or one int for all) with value;
    `_n` numbers, two per padded dim."""
    _n = 4

    def __init__(self, padding, value):
        super().__init__()
        self.padding, self.value = _ntuple(padding, self._n), value

    def forward(self, input):  # noqa: A002
        return F.pad(input, self.padding, value=self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad2d(_ConstantPadNd):
    _n = 4


class ConstantPad1d(_ConstantPadNd):
    _n = 2


class _Zeros:
    """ZeroPad*d: a ConstantPad*d of value 0.0 (each a subclass of its ConstantPad*d, as
    torch's), printed with the padding only."""

    def __init__(self, padding):
        _ConstantPadNd.__init__(self, padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(_Zeros, ConstantPad2d):
    pass


class ZeroPad1d(_Zeros, ConstantPad1d):
    pass


class _ModePadNd(Module):
    """Pad the last dims by (left, right, top, bottom, ...) (or one int for all) in F.pad's
    `_mode`: reflection (the edge not repeated), replication or circular, as torch's. A
    private base of the three families' private bases (siblings in torch)."""
    _n, _mode = 4, None

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, self._n)

    def forward(self, input):  # noqa: A002
        return F.pad(input, self.padding, mode=self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ReflectionPadNd(_ModePadNd):
    _mode = "reflect"


class _ReplicationPadNd(_ModePadNd):
    _mode = "replicate"


class _CircularPadNd(_ModePadNd):
    _mode = "circular"


class ReflectionPad2d(_ReflectionPadNd):
    _n = 4


class ReflectionPad1d(_ReflectionPadNd):
    _n = 2


class ReplicationPad2d(_ReplicationPadNd):
    _n = 4


class ReplicationPad1d(_ReplicationPadNd):
    _n = 2


class CircularPad2d(_CircularPadNd):
    _n = 4


class CircularPad1d(_CircularPadNd):
    _n = 2


class CosineSimilarity(Module):
    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


# -- recurrent cell ----------------------------------------------------------------------------
class RNNCell(RNNCellBase):
    """h' = nonlinearity(x W_ih^T + b_ih + h W_hh^T + b_hh), nonlinearity 'tanh' or 'relu'."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):  # noqa: A002
        if self.nonlinearity not in ("tanh", "relu"):     # NOTE: torch checks it here
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return self._step(input, hx)

    def _step(self, input, hx):  # noqa: A002
        unbatched = input.ndim == 1
        x = ops.expand_dims(input, axis=0) if unbatched else input
        h = self._zeros(x) if hx is None else (ops.expand_dims(hx, axis=0) if unbatched
                                                else hx)
        z = F.linear(x, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh,
                                                                 self.bias_hh)
        h = F.tanh(z) if self.nonlinearity == "tanh" else F.relu(z)
        return ops.squeeze(h, axis=0) if unbatched else h

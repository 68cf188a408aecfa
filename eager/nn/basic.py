"""The layers torch.nn defines beside Module: Linear, the batch norms, LayerNorm, Embedding,
Dropout, the simple activations, Sequential and ModuleList, and the recurrent cells' base.

>>> from dualgrad import eager
>>> from dualgrad.eager import nn
>>> nn.Linear(3, 2)(eager.ones(4, 3)).shape
torch.Size([4, 2])
"""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import TRACING, ShapeError, user_frame, where_str
from .. import devices as _device
from ..core import Tensor
from . import functional as F
from .core_functional import _refuse
from .module import factory_kwargs
from .module import (Module, Parameter, UninitializedParameter, _float, _redraw,
                     _uniform)


class DataParallel(Module):
    """torch's DataParallel on a machine without GPUs: the module runs as it is (torch keeps
    `module`, sets `device_ids = []` and calls it directly); state dict keys get torch's
    `module.` prefix. Train on several processes with DistributedDataParallel."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module, self.device_ids, self.output_device, self.dim = module, [], None, dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


# -- layers -----------------------------------------------------------------------------------
class Linear(Module):
    """y = x @ weight.T + bias, weight (out_features, in_features), torch's init."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features) if in_features else 0.0
        self.weight = _uniform((out_features, in_features), bound)
        self.bias = _uniform((out_features,), bound) if bias else None
        factory_kwargs(self, device, dtype)

    def reset_parameters(self):
        """Draw weight and bias anew, in place, as __init__ does (torch's bound 1/sqrt(in))."""
        _redraw((self.weight, self.bias),
                1.0 / math.sqrt(self.in_features) if self.in_features else 0.0)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class LazyLinear(Linear):
    """A Linear whose in_features is the last dim of its first input: until that call its
    weight and bias are UninitializedParameters (in_features=0; .to(dtype) and
    load_state_dict act on them as torch's); the first call draws them as Linear's and the
    module becomes a Linear.

    >>> from dualgrad import eager
    >>> layer = eager.nn.LazyLinear(2)
    >>> layer(eager.ones(4, 3)).shape, type(layer).__name__, layer.weight.shape
    (torch.Size([4, 2]), 'Linear', torch.Size([2, 3]))
    """

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.out_features = out_features
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.bias = UninitializedParameter(device=device, dtype=dtype) if bias else None

    def has_uninitialized_params(self):
        return any(isinstance(t, UninitializedParameter)
                   for t in list(self._parameters.values()) + list(self._buffers.values()))

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):  # noqa: A002
        """in_features from input's last dim; the parameters drawn at that shape."""
        if self.has_uninitialized_params():
            self.in_features = int(input.shape[-1])
            self.weight.materialize((self.out_features, self.in_features))
            if self.bias is not None:
                self.bias.materialize((self.out_features,))
            self.reset_parameters()
        if self.in_features == 0:      # NOTE: parameters loaded from a state dict
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(f"The in_features inferred from input: {input.shape[-1]} "
                                     f"is not equal to in_features from self.weight: "
                                     f"{self.weight.shape[-1]}")
            self.in_features = int(input.shape[-1])

    def forward(self, input):  # noqa: A002
        self.initialize_parameters(input)
        object.__setattr__(self, "__class__", self.cls_to_become)
        return Linear.forward(self, input)


class Bilinear(Module):
    """y = x1^T A x2 + b: weight (out_features, in1_features, in2_features), bias
    (out_features,), both uniform in +-1/sqrt(in1_features), as torch's."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = Parameter(np.empty((out_features, in1_features, in2_features), _float()))
        self.bias = Parameter(np.empty(out_features, _float())) if bias else None
        self.reset_parameters()
        factory_kwargs(self, device, dtype)

    def reset_parameters(self):
        """Draw weight and bias anew, in place, uniform in +-1/sqrt(in1_features)."""
        if self.in1_features <= 0:
            raise ValueError(f"in1_features must be > 0, but got (in1_features="
                             f"{self.in1_features})")
        _redraw((self.weight, self.bias), 1.0 / math.sqrt(self.in1_features))

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class _NormBase(Module):
    """What batch and instance norm share, as torch's _NormBase: the options, the affine
    weight (ones) and bias (zeros), and with track_running_stats the buffers running_mean
    (zeros), running_var (ones) and num_batches_tracked (0); without it the three are None."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = Parameter(np.ones(num_features, _float())) if affine else None
        self.bias = Parameter(np.zeros(num_features, _float())) if affine and bias else None
        if track_running_stats:
            self.register_buffer("running_mean", Tensor(np.zeros(num_features, _float())))
            self.register_buffer("running_var", Tensor(np.ones(num_features, _float())))
            self.register_buffer("num_batches_tracked", Tensor(np.array(0, np.int64)))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None
        factory_kwargs(self, device, dtype)

    def reset_running_stats(self):
        """running_mean to zeros, running_var to ones, num_batches_tracked to 0, in place."""
        if self.track_running_stats:
            self.running_mean._array[...] = 0
            self.running_var._array[...] = 1
            self.num_batches_tracked._array[...] = 0

    def reset_parameters(self):
        """The running statistics reset, the weight back to ones and the bias to zeros."""
        self.reset_running_stats()
        if self.weight is not None:
            self.weight._array[...] = 1
        if self.bias is not None:
            self.bias._array[...] = 0

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    """torch's BatchNorm: batch statistics in training (updating running_mean/running_var,
    momentum 0.1, unbiased variance for running_var), running statistics in eval."""
    _ndims = ()

    def forward(self, x):
        if len(x.shape) not in self._ndims:
            want = " or ".join(f"{d}-d" for d in self._ndims)
            raise ShapeError(f"{type(self).__name__}: expected {want} input (N, C, ...), got "
                             f"{tuple(x.shape)} (at {where_str(user_frame())})")
        track = self.track_running_stats
        momentum = self.momentum
        if self.training and track:
            F.count_batch(self.num_batches_tracked)
            if momentum is None:   # NOTE: torch's cumulative moving average: 1 / batches seen
                n = self.num_batches_tracked
                momentum = 1.0 / n.double() if TRACING[0] else 1.0 / float(n._array)
        stats = (self.running_mean, self.running_var) if track else (None, None)
        return F.batch_norm(x, *stats, self.weight, self.bias, self.training or not track,
                            0.0 if momentum is None else momentum, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch norm of (N, C) or (N, C, L) input over all dims but the channels (dim 1)."""
    _ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm of (N, C, H, W) input over N, H and W, per channel."""
    _ndims = (4,)


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
            tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.elementwise_affine = elementwise_affine
        self.weight = Parameter(np.ones(shape, _float())) if elementwise_affine else None
        self.bias = Parameter(np.zeros(shape, _float())) if elementwise_affine and bias \
            else None
        factory_kwargs(self, device, dtype)

    def reset_parameters(self):
        """weight back to ones and bias to zeros, in place."""
        if self.weight is not None:
            self.weight._array[...] = 1
        if self.bias is not None:
            self.bias._array[...] = 0

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine="
                f"{self.weight is not None}, bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x^2 over normalized_shape) + eps) * weight; eps=None is the input
    dtype's machine epsilon, as torch's."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
            tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = Parameter(np.ones(self.normalized_shape, _float())) if elementwise_affine \
            else None
        factory_kwargs(self, device, dtype)

    def reset_parameters(self):
        """weight back to ones, in place."""
        if self.weight is not None:
            self.weight._array[...] = 1

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class _EmbeddingTable(Module):
    """Embedding and EmbeddingBag's table (siblings in torch, so a private base here): weight
    (num_embeddings, embedding_dim) from N(0, 1), the padding_idx row zero; the lookup
    options; sparse raises NotImplementedError (dualgrad's tensors are dense)."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 _freeze=False, device=None, dtype=None):
        super().__init__()
        _refuse(type(self).__name__, sparse=(sparse, False))
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            w = ops.generator().standard_normal((num_embeddings, embedding_dim))
            w = w.astype(_float())
            if padding_idx is not None:
                w[padding_idx] = 0.0
        else:
            w = np.asarray(_weight)
            if w.shape != (num_embeddings, embedding_dim):
                raise AssertionError("Shape of weight does not match num_embeddings and "
                                     "embedding_dim")
        self.weight = Parameter(w, requires_grad=not _freeze)
        factory_kwargs(self, device, dtype)

    def reset_parameters(self):
        """Draw the weight anew from N(0, 1), the padding row zero, as torch's."""
        w = ops.generator().standard_normal(self.weight.shape).astype(self.weight._array.dtype)
        if self.padding_idx is not None:
            w[self.padding_idx] = 0.0
        self.weight._array[...] = w

    def _options(self):
        """torch's repr of the lookup options (the ones not at their default)."""
        s = "" if self.max_norm is None else f", max_norm={self.max_norm}"
        s += "" if self.norm_type == 2 else f", norm_type={self.norm_type}"
        return s + ("" if self.scale_grad_by_freq is False else
                    f", scale_grad_by_freq={self.scale_grad_by_freq}")


class Embedding(_EmbeddingTable):
    """A lookup table: rows of weight picked by index; the padding_idx row gets no gradient;
    max_norm and scale_grad_by_freq as F.embedding's."""

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None,
                        norm_type=2.0, scale_grad_by_freq=False, sparse=False):
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)

    def forward(self, input):  # noqa: A002 - torch's argument name
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq)

    def extra_repr(self):
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}{self._options()}"


class EmbeddingBag(_EmbeddingTable):
    """Sums, means or maxes of bags of embedding rows (F.embedding_bag): bags are the rows of
    a 2-d input, or the runs of a 1-d input that `offsets` start. The weight starts as
    Embedding's (N(0, 1), the padding row zero); sparse raises NotImplementedError."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, device=None, dtype=None):
        super().__init__(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
                         scale_grad_by_freq, sparse, _weight, device=device, dtype=dtype)
        self.mode, self.include_last_offset = mode, include_last_offset

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, mode="mean", sparse=False,
                        include_last_offset=False, padding_idx=None):
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                  _weight=embeddings, include_last_offset=include_last_offset,
                  padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag

    def forward(self, input, offsets=None, per_sample_weights=None):  # noqa: A002
        if self.mode not in ("sum", "mean", "max"):     # NOTE: torch checks it here
            raise ValueError(f"mode has to be one of sum, mean or max, got {self.mode!r}")
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return (f"{self.num_embeddings}, {self.embedding_dim}{self._options()}, "
                f"mode={self.mode!r}{pad}")


class _DropoutNd(Module):
    """The options every dropout module takes, as torch's _DropoutNd; each subclass names its
    functional form (`_fn`)."""
    _fn = None

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):  # noqa: A002
        return type(self)._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    _fn = staticmethod(F.dropout)


def _activation(name, fn, doc):
    cls = type(name, (Module,), {"forward": lambda self, x: fn(x), "__doc__": doc})
    return cls


Tanh = _activation("Tanh", F.tanh, "tanh(x)")
Sigmoid = _activation("Sigmoid", F.sigmoid, "1 / (1 + exp(-x))")


class Identity(Module):
    """Returns its input; any constructor arguments are ignored (as torch)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, linear where beta * x > threshold (torch.nn.Softplus)."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x):
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class _OverDim(Module):
    """Softmax, LogSoftmax and Softmin's one option. dim=None is torch's legacy implicit dim:
    0 for 0-, 1- and 3-d inputs, else 1. (A private base: in torch the three are siblings.)"""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_OverDim):
    def forward(self, x):
        return F.softmax(x, self.dim)


class LogSoftmax(_OverDim):
    def forward(self, x):
        return F.log_softmax(x, self.dim)


class Softmin(_OverDim):
    def forward(self, x):
        return F.softmin(x, self.dim)


class _ListOps:
    """What Sequential and ModuleList share with torch's: append, extend, insert, pop,
    item assignment and deletion (the keys stay "0", "1", … in order)."""

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        items = list(self._modules.values())
        items.insert(index if index >= 0 else index + len(items), module)
        self._renumber(items)

    def pop(self, index=-1):
        items = list(self._modules.values())
        out = items.pop(index)
        self._renumber(items)
        return out

    def __setitem__(self, index, module):
        key = list(self._modules)[index]
        self._modules[key] = module

    def __delitem__(self, index):
        items = list(self._modules.values())
        del items[index]
        self._renumber(items)

    def __iadd__(self, modules):
        return self.extend(modules)

    def _renumber(self, items):
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)


class Sequential(_ListOps, Module):
    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
            return
        for i, m in enumerate(modules):
            self.add_module(str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, i):
        if isinstance(i, slice):   # torch returns a Sequential that keeps the names
            return Sequential(OrderedDict(list(self._modules.items())[i]))
        return list(self._modules.values())[i]

    __len__, __iter__ = (lambda self: len(self._modules),
                         lambda self: iter(self._modules.values()))


class ModuleList(_ListOps, Module):
    def __init__(self, modules=()):
        super().__init__()
        for m in modules:
            self.append(m)

    def __getitem__(self, i):
        if isinstance(i, slice):   # NOTE: torch gives a ModuleList
            return ModuleList(list(self._modules.values())[i])
        return list(self._modules.values())[i]

    def __add__(self, other):
        return ModuleList(list(self) + list(other))

    __len__, __iter__ = (lambda self: len(self._modules),
                         lambda self: iter(self._modules.values()))

    def __repr__(self):
        """torch's: a run of equal children printed once, as `(0-5): 6 x Layer(...)`."""
        runs = []      # [first index, last index, repr]
        for i, m in enumerate(self):
            r = repr(m)
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        name = type(self).__name__     # NOTE: a subclass's own name, as torch prints it
        if not runs:
            return f"{name}()"
        lines = [f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}"
                 for a, b, r in runs]
        return f"{name}(\n  " + "\n  ".join(x.replace("\n", "\n  ") for x in lines) + "\n)"


# -- recurrent cells --------------------------------------------------------------------------
class RNNCellBase(Module):
    """The cells' base, as torch's: weight_ih (num_chunks * hidden, input), weight_hh
    (num_chunks * hidden, hidden) and the two biases, uniform in +-1/sqrt(hidden_size)."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        b = self._bound()
        self.weight_ih = _uniform((num_chunks * hidden_size, input_size), b)
        self.weight_hh = _uniform((num_chunks * hidden_size, hidden_size), b)
        self.bias_ih = _uniform((num_chunks * hidden_size,), b) if bias else None
        self.bias_hh = _uniform((num_chunks * hidden_size,), b) if bias else None
        factory_kwargs(self, device, dtype)

    def _bound(self):
        return 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0

    def reset_parameters(self):
        """Draw every parameter anew, in place, uniform in +-1/sqrt(hidden_size)."""
        _redraw(self.parameters(), self._bound())

    def _zeros(self, x):
        from ..factories import zeros   # NOTE: a meta tensor when x's shape is symbolic
        return zeros(tuple(x.shape[:-1]) + (self.hidden_size,), dtype=x.dtype)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        s += "" if self.bias is True else f", bias={self.bias}"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        return s + ("" if nonlinearity == "tanh" else f", nonlinearity={nonlinearity}")


class LSTMCell(RNNCellBase):
    """(h, c) = cell(x, (h, c)); gates in torch's order i, f, g, o."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, x, state=None):
        h, c = state if state is not None else (self._zeros(x), self._zeros(x))
        z = F.linear(x, self.weight_ih) + F.linear(h, self.weight_hh)
        if self.bias_ih is not None:
            z = z + (self.bias_ih + self.bias_hh)   # NOTE: the biases' gradient summed once
        c = ops.lstm_cell_c(z, c)    # NOTE: one kernel each way for the pointwise part
        return ops.lstm_cell_h(z, c), c


class GRUCell(RNNCellBase):
    """h = cell(x, h); gates in torch's order r, z, n."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, x, h=None):
        h = h if h is not None else self._zeros(x)
        gi = ops.split(F.linear(x, self.weight_ih, self.bias_ih), self.hidden_size, axis=-1)
        gh = ops.split(F.linear(h, self.weight_hh, self.bias_hh), self.hidden_size, axis=-1)
        r = F.sigmoid(gi[0] + gh[0])
        z = F.sigmoid(gi[1] + gh[1])
        n = F.tanh(gi[2] + r * gh[2])
        return (1.0 - z) * n + z * h

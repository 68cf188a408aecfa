"""eager.nn: Modules with auto-registered parameters, as torch.nn.

>>> from dualgrad import eager
>>> from dualgrad.eager import nn
>>> eager.manual_seed(0)
>>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
>>> model(eager.randn(3, 4)).shape
(3, 2)
>>> [name for name, _ in model.named_parameters()]
['0.weight', '0.bias', '2.weight', '2.bias']
"""
from __future__ import annotations

import math
from collections import OrderedDict, namedtuple

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import ShapeError, user_frame, where_str
from .. import devices as _device
from ..core import Tensor, _to_args, zero_grads
from ..devices import META_IMPL
from . import functional
from . import module_hooks
from . import functional as F


class Parameter(Tensor):
    """A Tensor that a Module registers as a parameter (requires_grad=True by default)."""
    __slots__ = ()

    def __init__(self, data, requires_grad=True):
        if isinstance(data, Tensor):
            data = data._array
        super().__init__(np.array(data, copy=True), requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


def _name_layer(module, err):
    """Add the line that built the failing layer to a shape error passing out of it.

    The error's own `at FILE:LINE` is the call (`model(x)`); a wrong layer size is written
    where the layer was built (`nn.Linear(64, 10)`), so the message names that line too.
    Only the innermost built-in layer does this, once.
    """
    loc = module.__dict__.get("_loc")
    if loc is None or getattr(err, "layer", None) is not None or module._modules \
            or not type(module).__module__.startswith(__name__):
        return
    err.layer = module
    err.args = (f"{err.args[0]}\n  in layer {type(module).__name__}({module.extra_repr()}) "
                f"created at {where_str(loc)}",) + err.args[1:]


def _uniform(shape, bound, dtype=np.float32):
    return Parameter(ops.generator().uniform(-bound, bound, shape).astype(dtype))


IncompatibleKeys = namedtuple("IncompatibleKeys", "missing_keys unexpected_keys")


# NOTE: counts changes of any module's attributes, flags, buffers or parameters (not their
# values): compile() re-reads its guarded module state only when it moved (signatures.py)
STATE_VERSION = [0]


class Module:
    """Base class: assign Parameters and Modules as attributes and they are registered."""

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_loc", user_frame())   # the user's line that built it

    def __setattr__(self, name, value):
        STATE_VERSION[0] += 1
        if "_parameters" not in self.__dict__:
            raise AttributeError("call super().__init__() before assigning attributes in a "
                                 "Module's __init__")
        if name in self._buffers and (value is None or isinstance(value, Tensor)) \
                and not isinstance(value, Parameter):
            self._buffers[name] = value          # `self.mask = ...` updates the buffer
            return
        for d in (self._parameters, self._modules, self._buffers):
            d.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_modules", "_buffers"):
            if key in d and name in d[key]:
                return d[key][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for d in (self._parameters, self._modules, self._buffers):
            if name in d:
                del d[name]
                return
        STATE_VERSION[0] += 1
        object.__delattr__(self, name)

    def register_buffer(self, name, tensor, persistent=True):
        """A tensor kept with the module but not trained (a running statistic, a causal mask);
        saved in state_dict unless persistent=False."""
        if "." in name or not name:
            raise KeyError(f"buffer name can't contain \".\" or be empty, got {name!r}")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            f"(torch Tensor or None required)")
        self.__dict__.pop(name, None)
        self._buffers[name] = tensor
        STATE_VERSION[0] += 1
        nonpersistent = self.__dict__.setdefault("_non_persistent", set())
        (nonpersistent.discard if persistent else nonpersistent.add)(name)

    def register_parameter(self, name, param):
        self._parameters[name] = param
        STATE_VERSION[0] += 1

    def add_module(self, name, module):
        self._modules[name] = module
        STATE_VERSION[0] += 1

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        if ops.core.TRACING[0]:   # NOTE: a compile() trace guards on what this module reads
            tr = ops.core.current_trace()
            if hasattr(tr, "touch"):
                tr.touch(self)
        try:
            if "_hooked" in self.__dict__:
                return module_hooks.call(self, args, kwargs)
            return self.forward(*args, **kwargs)
        except ShapeError as e:
            _name_layer(self, e)
            raise

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) (or (module, args, kwargs)) before each forward; what it returns
        (if not None) replaces the inputs."""
        return module_hooks.add(self, module_hooks.PRE, hook, with_kwargs, prepend)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """hook(module, args, output) (or (module, args, kwargs, output)) after each forward;
        what it returns (if not None) replaces the output."""
        return module_hooks.add(self, module_hooks.POST, hook, with_kwargs, prepend)

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) when the input's gradient is computed; what it
        returns (if not None) replaces grad_input. One tensor input and output only."""
        return module_hooks.add(self, module_hooks.BACKWARD, hook, False, prepend)

    def register_backward_hook(self, hook):
        raise NotImplementedError("Module.register_backward_hook (deprecated in torch) is not "
                                  "supported by dualgrad; use register_full_backward_hook")

    # -- traversal ----------------------------------------------------------------------------
    def named_modules(self, prefix=""):
        yield prefix, self
        for name, m in self._modules.items():
            yield from m.named_modules(f"{prefix}.{name}" if prefix else name)

    def modules(self):
        return (m for _, m in self.named_modules())

    def children(self):
        return iter(self._modules.values())

    def named_children(self):
        return iter(self._modules.items())

    def named_parameters(self, prefix="", recurse=True):
        seen = set()
        for mprefix, m in self.named_modules(prefix) if recurse else [(prefix, self)]:
            for name, p in m._parameters.items():
                if p is not None and id(p) not in seen:
                    seen.add(id(p))
                    yield (f"{mprefix}.{name}" if mprefix else name), p

    def parameters(self, recurse=True):
        # NOTE: a subclass may override named_parameters(prefix) alone (FSDP does)
        named = self.named_parameters() if recurse else self.named_parameters(recurse=False)
        return (p for _, p in named)

    def named_buffers(self, prefix="", recurse=True):
        for mprefix, m in self.named_modules(prefix) if recurse else [(prefix, self)]:
            for name, b in m._buffers.items():
                if b is not None:
                    yield (f"{mprefix}.{name}" if mprefix else name), b

    def buffers(self, recurse=True):
        named = self.named_buffers() if recurse else self.named_buffers(recurse=False)
        return (b for _, b in named)

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # -- state --------------------------------------------------------------------------------
    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        """name -> detached tensor (the tensors themselves with keep_vars), in torch's order:
        each module's parameters, then its persistent buffers, then its children's; a shared
        (tied) parameter is listed under every name it has, as torch."""
        out = OrderedDict() if destination is None else destination
        self._state_into(out, prefix, keep_vars)
        return out

    def _state_into(self, out, prefix, keep_vars):
        skip = self.__dict__.get("_non_persistent", ())
        for name, v in list(self._parameters.items()) + [
                (n, b) for n, b in self._buffers.items() if n not in skip]:
            if v is not None:
                out[prefix + name] = v if keep_vars else v.detach()
        for name, m in self._modules.items():
            if m is not None:
                m._state_into(out, f"{prefix}{name}.", keep_vars)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy values in place; missing, unexpected or mis-shaped entries are a clear error
        (with strict=False the missing and unexpected keys are returned, as torch's
        `_IncompatibleKeys(missing_keys, unexpected_keys)`)."""
        if assign:
            raise NotImplementedError("load_state_dict(assign=True) is not supported by "
                                      "dualgrad; the values are copied into the parameters")
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}: "
                               f"missing keys {missing}, unexpected keys {unexpected}")
        values = {k: np.asarray(state_dict[k]._array if isinstance(state_dict[k], Tensor)
                                else state_dict[k]) for k in own if k in state_dict}
        # NOTE: every shape is checked before anything is copied: a failed load leaves the
        # model as it was, never half-loaded.
        bad = [f"size mismatch for {k}: checkpoint has {v.shape}, the model has "
               f"{own[k].shape}" for k, v in values.items() if v.shape != own[k].shape]
        if bad:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}: "
                               + "; ".join(bad))
        for k, v in values.items():
            own[k]._array[...] = v
        return IncompatibleKeys(missing, unexpected)

    def train(self, mode=True):
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        STATE_VERSION[0] += 1
        return self

    def eval(self):
        return self.train(False)

    def zero_grad(self, set_to_none=True):
        """Drop every parameter's .grad, or (set_to_none=False) fill the existing ones with
        zeros, as torch."""
        zero_grads(self.parameters(), set_to_none)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    # -- device and dtype ---------------------------------------------------------------------
    def to(self, *args, **kwargs):
        """to(device), to(dtype), to(device, dtype), to(tensor): casts floating-point parameters
        and buffers (and their gradients) in place, keeping the same Parameter objects;
        to("meta") moves them to the meta device (eager/meta.py), dropping their values."""
        dtype, _, meta = _to_args(args, kwargs)
        if meta is not None:
            META_IMPL["module"](self, Parameter)
        if dtype is not None and np.dtype(dtype).kind not in "fc":
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={np.dtype(dtype)}")
        return self._cast(dtype) if dtype is not None else self

    def _cast(self, dtype):
        for t in list(self.parameters()) + [b for _, b in self.named_buffers()]:
            if t._array.dtype.kind in "fc" and t._array.dtype != dtype:
                t._array = t._array.astype(dtype)
                if t.grad is not None:
                    t.grad._array = t.grad._array.astype(dtype)
        return self

    def float(self):
        return self._cast(np.dtype(np.float32))

    def double(self):
        return self._cast(np.dtype(np.float64))

    def half(self):
        return self._cast(np.dtype(np.float16))

    def type(self, dst_type):
        return self._cast(np.dtype(dst_type))

    def cpu(self):
        return self

    def cuda(self, device=None):
        raise AssertionError(_device.NO_CUDA)

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = [f"{type(self).__name__}({self.extra_repr()}"]
        for name, m in self._modules.items():
            sub = repr(m).replace("\n", "\n  ")
            lines.append(f"  ({name}): {sub}")
        return "\n".join(lines) + ("\n)" if self._modules else ")")


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
def _factory_kwargs(module, device, dtype):
    """A layer's `device=` / `dtype=`, as torch's factory kwargs: the CPU (else torch's
    CPU-only error) and the parameters' floating dtype."""
    _device.check(device)
    if dtype is not None:
        module.to(dtype)


class Linear(Module):
    """y = x @ weight.T + bias, weight (out_features, in_features), torch's init."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features) if in_features else 0.0
        self.weight = _uniform((out_features, in_features), bound)
        self.bias = _uniform((out_features,), bound) if bias else None
        _factory_kwargs(self, device, dtype)

    def reset_parameters(self):
        """Draw weight and bias anew, in place, as __init__ does (torch's bound 1/sqrt(in))."""
        bound = 1.0 / math.sqrt(self.in_features) if self.in_features else 0.0
        for p in (self.weight, self.bias):
            if p is not None:
                p._array[...] = _uniform(p.shape, bound, p._array.dtype)._array

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class _BatchNorm(Module):
    """torch's BatchNorm: batch statistics in training (updating running_mean/running_var,
    momentum 0.1, unbiased variance for running_var), running statistics in eval."""
    _ndims = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, *, bias=True):
        super().__init__()
        if momentum is None:
            raise NotImplementedError(f"{type(self).__name__}(momentum=None) (a cumulative "
                                      f"moving average) is not supported by dualgrad")
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = Parameter(np.ones(num_features, np.float32)) if affine else None
        self.bias = Parameter(np.zeros(num_features, np.float32)) if affine and bias else None
        if track_running_stats:
            self.register_buffer("running_mean", Tensor(np.zeros(num_features, np.float32)))
            self.register_buffer("running_var", Tensor(np.ones(num_features, np.float32)))
            self.register_buffer("num_batches_tracked", Tensor(np.array(0, np.int64)))

    def forward(self, x):
        if len(x.shape) not in self._ndims:
            want = " or ".join(f"{d}-d" for d in self._ndims)
            raise ShapeError(f"{type(self).__name__}: expected {want} input (N, C, ...), got "
                             f"{tuple(x.shape)} (at {where_str(user_frame())})")
        track = self.track_running_stats
        if self.training and track:
            F.count_batch(self.num_batches_tracked)
        stats = (self.running_mean, self.running_var) if track else (None, None)
        return F.batch_norm(x, *stats, self.weight, self.bias, self.training or not track,
                            self.momentum, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}")


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


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
            tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.weight = Parameter(np.ones(shape, np.float32)) if elementwise_affine else None
        self.bias = Parameter(np.zeros(shape, np.float32)) if elementwise_affine and bias \
            else None

    def reset_parameters(self):
        """weight back to ones and bias to zeros, in place."""
        if self.weight is not None:
            self.weight._array[...] = 1
        if self.bias is not None:
            self.bias._array[...] = 0

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}"


class Embedding(Module):
    """A lookup table: rows of weight (num_embeddings, embedding_dim) picked by index; the
    padding_idx row starts at zero and gets no gradient. max_norm, scale_grad_by_freq and
    sparse raise NotImplementedError."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 _freeze=False, device=None, dtype=None):
        super().__init__()
        F._refuse("Embedding", max_norm=(max_norm, None),
                  scale_grad_by_freq=(scale_grad_by_freq, False), sparse=(sparse, False))
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            w = ops.generator().standard_normal((num_embeddings, embedding_dim))
            w = w.astype(np.float32)
            if padding_idx is not None:
                w[padding_idx] = 0.0
        else:
            w = np.asarray(_weight)
            if w.shape != (num_embeddings, embedding_dim):
                raise AssertionError("Shape of weight does not match num_embeddings and "
                                     "embedding_dim")
        self.weight = Parameter(w, requires_grad=not _freeze)
        _factory_kwargs(self, device, dtype)

    def reset_parameters(self):
        """Draw the weight anew from N(0, 1), the padding row zero, as torch's."""
        w = ops.generator().standard_normal(self.weight.shape).astype(self.weight._array.dtype)
        if self.padding_idx is not None:
            w[self.padding_idx] = 0.0
        self.weight._array[...] = w

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None,
                        norm_type=2.0, scale_grad_by_freq=False, sparse=False):
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)

    def forward(self, input):  # noqa: A002 - torch's argument name
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self):
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"


class Dropout(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):  # noqa: A002
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


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


class Softmax(Module):
    """dim=None is torch's legacy implicit dim: 0 for 0-, 1- and 3-d inputs, else 1."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmax(x, self.dim)


class LogSoftmax(Softmax):
    def forward(self, x):
        return F.log_softmax(x, self.dim)


class Softmin(Softmax):
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


# -- recurrent cells --------------------------------------------------------------------------
class _Cell(Module):
    def __init__(self, input_size, hidden_size, gates, bias=True):
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        b = 1.0 / math.sqrt(hidden_size)
        self.weight_ih = _uniform((gates * hidden_size, input_size), b)
        self.weight_hh = _uniform((gates * hidden_size, hidden_size), b)
        self.bias_ih = _uniform((gates * hidden_size,), b) if bias else None
        self.bias_hh = _uniform((gates * hidden_size,), b) if bias else None

    def _zeros(self, x):
        from ..factories import zeros   # NOTE: a meta tensor when x's shape is symbolic
        return zeros(tuple(x.shape[:-1]) + (self.hidden_size,), dtype=x.dtype)

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}"


class LSTMCell(_Cell):
    """(h, c) = cell(x, (h, c)); gates in torch's order i, f, g, o."""

    def __init__(self, input_size, hidden_size, bias=True):
        super().__init__(input_size, hidden_size, 4, bias)

    def forward(self, x, state=None):
        h, c = state if state is not None else (self._zeros(x), self._zeros(x))
        z = F.linear(x, self.weight_ih) + F.linear(h, self.weight_hh)
        if self.bias_ih is not None:
            z = z + (self.bias_ih + self.bias_hh)   # NOTE: the biases' gradient summed once
        c = ops.lstm_cell_c(z, c)    # NOTE: one kernel each way for the pointwise part
        return ops.lstm_cell_h(z, c), c


class GRUCell(_Cell):
    """h = cell(x, h); gates in torch's order r, z, n."""

    def __init__(self, input_size, hidden_size, bias=True):
        super().__init__(input_size, hidden_size, 3, bias)

    def forward(self, x, h=None):
        h = h if h is not None else self._zeros(x)
        gi = ops.split(F.linear(x, self.weight_ih, self.bias_ih), self.hidden_size, axis=-1)
        gh = ops.split(F.linear(h, self.weight_hh, self.bias_hh), self.hidden_size, axis=-1)
        r = F.sigmoid(gi[0] + gh[0])
        z = F.sigmoid(gi[1] + gh[1])
        n = F.tanh(gi[2] + r * gh[2])
        return (1.0 - z) * n + z * h


from .containers import ModuleDict, ParameterDict, ParameterList  # noqa: E402
from .rnn import GRU, LSTM, RNN, RNNBase  # noqa: E402
from .attention import MultiheadAttention  # noqa: E402
from .activation import (CELU, ELU, GLU, SELU, Hardsigmoid, Hardswish, Hardtanh,  # noqa: E402
                         LeakyReLU, LogSigmoid, Mish, PReLU, ReLU, ReLU6, SiLU, Softsign,
                         Tanhshrink)
from .layers import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d,  # noqa: E402
                     AdaptiveMaxPool2d, AvgPool1d, AvgPool2d, ConstantPad1d, ConstantPad2d,
                     Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d, CosineSimilarity,
                     Dropout1d, Dropout2d, GroupNorm, InstanceNorm1d, InstanceNorm2d,
                     MaxPool1d, MaxPool2d, PairwiseDistance, PixelShuffle, PixelUnshuffle,
                     RNNCell, Unflatten, Upsample, UpsamplingNearest2d, ZeroPad1d, ZeroPad2d,
                     ReflectionPad1d, ReflectionPad2d, ReplicationPad1d, ReplicationPad2d,
                     CircularPad1d, CircularPad2d)
from .loss import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss,  # noqa: E402
                   CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MarginRankingLoss, MSELoss,
                   NLLLoss, SmoothL1Loss, TripletMarginLoss)
from .transformer import (Transformer, TransformerDecoder,  # noqa: E402
                          TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer)
from . import init, utils  # noqa: E402
from types import SimpleNamespace as _NS  # noqa: E402

# NOTE: torch.nn.modules.<file>.<Class>: the paths type hints and isinstance checks spell out
modules = _NS(module=_NS(Module=Module), linear=_NS(Linear=Linear, Identity=Identity,
                                                    NonDynamicallyQuantizableLinear=Linear),
              dropout=_NS(Dropout=Dropout), sparse=_NS(Embedding=Embedding),
              activation=_NS(MultiheadAttention=MultiheadAttention, ReLU=ReLU),
              container=_NS(Sequential=Sequential, ModuleList=ModuleList, ModuleDict=ModuleDict),
              normalization=_NS(LayerNorm=LayerNorm), rnn=_NS(RNN=RNN, LSTM=LSTM, GRU=GRU),
              transformer=_NS(TransformerEncoder=TransformerEncoder,
                              TransformerEncoderLayer=TransformerEncoderLayer))

__all__ = [n for n in dir() if not n.startswith("_") and n not in ("annotations", "functools", "math", "np", "OrderedDict", "ops", "ShapeError", "user_frame", "where_str", "Tensor")]

"""torch.autograd: `grad` (gradients returned, not accumulated; `create_graph` for double
backward), `backward` (several outputs at once, `inputs=`), and `Function`, a user-written
op whose backward is its own `backward(ctx, *grad_outputs)`, joined to the tape as one entry.

>>> from dualgrad import eager as torch
>>> x = torch.tensor([1.0, 2.0], requires_grad=True)
>>> g, = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
>>> g.tolist(), torch.autograd.grad(g.sum(), x)[0].tolist()
([3.0, 12.0], [6.0, 12.0])
>>> class Square(torch.autograd.Function):
...     @staticmethod
...     def forward(ctx, a):
...         ctx.save_for_backward(a)
...         return a * a
...     @staticmethod
...     def backward(ctx, grad_out):
...         a, = ctx.saved_tensors
...         return 2 * a * grad_out
>>> Square.apply(x).sum().backward()
>>> x.grad.tolist()
[2.0, 4.0]
"""
from __future__ import annotations

import numpy as np
from dualgrad.ops.rules import floating

from dualgrad import ops
from dualgrad.ops.core import TRACING, current_trace, tracing
from .core import (ANOMALY, _GRAD, Tensor, accumulate_into, gradients_at, recorded,
                   seed_gradient)

__all__ = ["grad", "backward", "Function", "Variable"]


def _as_list(xs):
    return [xs] if isinstance(xs, Tensor) else list(xs)


def _seeds(outputs, grad_outputs, create_graph):
    """One starting gradient per output: given, or ones for a one-element output."""
    given = [None] * len(outputs) if grad_outputs is None else _as_list(grad_outputs)
    if len(given) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(given)} for "
                           f"{len(outputs)} outputs")
    seeds = []
    for out, g in zip(outputs, given):
        g = seed_gradient(out, g)
        if tuple(g.shape) != tuple(out.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output has a shape of "
                               f"{tuple(g.shape)} and output has a shape of {tuple(out.shape)}")
        seeds.append(g if create_graph or not g.requires_grad else g.detach())
    return seeds


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of outputs (summed, each weighted by its grad_output) with respect to
    each of inputs, as a tuple; nothing is accumulated into .grad. With create_graph=True the
    gradients are on the tape themselves, so they can be differentiated again."""
    if is_grads_batched:
        raise NotImplementedError("autograd.grad(is_grads_batched=True) is not supported by "
                                  "dualgrad; loop over the grad_outputs")
    if retain_graph is None:
        retain_graph = create_graph
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs, inputs = _as_list(outputs), _as_list(inputs)
    for x in inputs:
        if not isinstance(x, Tensor) or not x.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    seeds = _seeds(outputs, grad_outputs, create_graph)
    result = []
    for x, g in zip(inputs, gradients_at(outputs, seeds, inputs, retain_graph, create_graph)):
        if g is None:
            if not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have "
                                   "been used in the graph. Set allow_unused=True if this is "
                                   "the desired behavior.")
            g = Tensor(np.zeros_like(x._array)) if materialize_grads else None
        result.append(g)
    return tuple(result)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """torch.autograd.backward: backward() from several outputs at once (their gradients
    add up in each leaf's .grad); `inputs` restricts the accumulation to those tensors."""
    if grad_variables is not None:
        grad_tensors = grad_variables
    tensors = _as_list(tensors)
    seeds = _seeds(tensors, grad_tensors, create_graph)
    if inputs is not None:
        accumulate_into(tensors, seeds, _as_list(inputs), retain_graph, create_graph)
        return
    if len(tensors) == 1:
        tensors[0].backward(seeds[0], retain_graph, create_graph)
        return
    with _enabled():   # NOTE: sum_i <t_i, g_i> has exactly the sum of their gradients
        total = sum((t * g).sum() for t, g in zip(tensors, seeds))
    total.backward(retain_graph=retain_graph, create_graph=create_graph)


class _enabled:
    def __enter__(self):
        self.prev, _GRAD.enabled = _GRAD.enabled, True

    def __exit__(self, *exc):
        _GRAD.enabled = self.prev


def Variable(data, requires_grad=False, volatile=False):  # noqa: N802 - torch's name
    """The pre-0.4 wrapper: today a tensor (sharing data's values) with requires_grad set."""
    if volatile:
        raise NotImplementedError("Variable(volatile=True) was removed from PyTorch; use "
                                  "`with torch.no_grad():`")
    t = data if isinstance(data, Tensor) else Tensor(np.asarray(data))
    return Tensor(t._array, requires_grad=requires_grad)


# -- autograd.Function ------------------------------------------------------------------------
class FunctionCtx:
    """The `ctx` of a Function: what forward saves for backward."""

    def __init__(self):
        self.saved_tensors, self.needs_input_grad = (), ()
        self.materialize_grads, self.non_differentiable = True, set()

    def save_for_backward(self, *tensors):
        self.saved_tensors = tuple(tensors)

    def mark_non_differentiable(self, *outputs):
        self.non_differentiable |= {id(o) for o in outputs}

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors):
        raise NotImplementedError("autograd.Function ctx.mark_dirty (a forward that changes "
                                  "its input in place) is not supported by dualgrad; return a "
                                  "new tensor")


class Function:
    """Subclass with static `forward(ctx, *args)` and `backward(ctx, *grad_outputs)` (or
    torch 2's `forward(*args)` with `setup_context(ctx, inputs, output)`); call `.apply`.

    forward runs without recording; its outputs join the tape as one entry whose gradient
    rule is backward, which returns one gradient (or None) per forward argument.
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    vjp = backward

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is not "
                           "supported. Please use new-style autograd function with static "
                           "forward method.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        with _disabled():
            if cls.setup_context is Function.setup_context:
                out = cls.forward(ctx, *args, **kwargs)
            else:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
        if not (_GRAD.enabled and any(ctx.needs_input_grad)):
            return out
        return _join(cls, ctx, args, out)


class _disabled:
    def __enter__(self):
        self.prev, _GRAD.enabled = _GRAD.enabled, False

    def __exit__(self, *exc):
        _GRAD.enabled = self.prev


def _join(cls, ctx, args, out):
    """forward's floating outputs as tape entries whose rule calls cls.backward. Inside a
    compile() trace each becomes a graph node (its forward value passed through, the tracer
    inputs beside it) whose gradient rule runs cls.backward on tracers of the same trace, so
    the user's backward is traced into the gradient graph, not a graph break."""
    single = isinstance(out, Tensor)
    outs = [out] if single else list(out)
    positions = [k for k, a in enumerate(args) if isinstance(a, Tensor)]
    inputs = tuple(args[k] for k in positions)
    trace = current_trace() if TRACING[0] else None
    name = f"{cls.__name__}Backward"
    op = ops.Op(name, None, None, _function_vjp) if trace is None else \
        ops.Op(name, _passed_spec, _passed_value, _traced_vjp)
    joined = []
    for i, o in enumerate(outs):
        if isinstance(o, Tensor) and floating(o._array.dtype) and \
                id(o) not in ctx.non_differentiable:
            attrs = {"fn": cls, "ctx": ctx, "index": i, "outs": outs, "positions": positions}
            o = recorded(o._array, op, inputs, attrs) if trace is None else \
                ops.bind(op, o, *inputs, trace=trace, **attrs)
        joined.append(o)
    return joined[0] if single else type(out)(joined)


def _passed_spec(spec, *inputs, **attrs):
    return spec


def _passed_value(value, *inputs, **attrs):
    return value


def _traced_vjp(g, value, *inputs, out, needs, trace, **attrs):
    """The traced join's rule (graph.gradients hands it graph tensors): cls.backward on
    tracers of the trace forward ran in, its results lifted back into that trace's graph."""
    with tracing(trace):
        grads = _function_vjp(trace.wrap(g, False), *[trace.wrap(x, False) for x in inputs],
                              out=out, needs=needs[1:], **attrs)
        return (None,) + tuple(None if r is None else trace.lift(r) for r in grads)


def _zeros(o):
    return Tensor(np.zeros_like(o._array)) if type(o) is Tensor else ops.zeros_like(o)


def _function_vjp(g, *inputs, out, needs, fn, ctx, index, outs, positions):
    """cls.backward with this output's gradient (the others' zeros, or None without
    materialized grads: a vector-Jacobian product is linear, so the sum over outputs is the
    gradient torch's single call gives)."""
    grads = [g if i == index else (_zeros(o) if ctx.materialize_grads else None)
             if isinstance(o, Tensor) else None for i, o in enumerate(outs)]
    result = fn.backward(ctx, *grads)
    result = result if isinstance(result, tuple) else (result,)
    n_args = max(positions) + 1 if positions else 0
    if len(result) < n_args:
        raise RuntimeError(f"function {fn.__name__}Backward returned an incorrect number of "
                           f"gradients (expected {n_args}, got {len(result)})")
    picked = []
    for k, x in zip(positions, inputs):
        r = result[k]
        if r is not None:
            r = r if isinstance(r, Tensor) else Tensor(np.asarray(r, x.dtype))
            if tuple(r.shape) != tuple(x.shape):
                raise RuntimeError(f"Function {fn.__name__}Backward returned an invalid "
                                   f"gradient at index {k} - got {list(r.shape)} but "
                                   f"expected shape compatible with {list(x.shape)}")
        picked.append(r)
    return tuple(picked)


class set_detect_anomaly:
    """torch.autograd.set_detect_anomaly(mode, check_nan=True): turns anomaly mode on or off
    at once, and back to what it was when used as a context manager. In anomaly mode each
    backward rule's results are checked, and a NaN raises "Function 'op' returned nan values
    in its k-th output" naming the op (under compile() the replayed graph is not checked)."""

    def __init__(self, mode, check_nan=True):
        self.prev = dict(ANOMALY)
        ANOMALY.update(enabled=bool(mode), check_nan=bool(check_nan))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        ANOMALY.update(self.prev)
        return False


class detect_anomaly:
    """torch.autograd.detect_anomaly(check_nan=True): anomaly mode inside a with block, with
    torch's warning that it slows backward down."""

    def __init__(self, check_nan=True):
        import warnings
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self):
        self.prev = dict(ANOMALY)
        ANOMALY.update(enabled=True, check_nan=bool(self.check_nan))
        return self

    def __exit__(self, *exc):
        ANOMALY.update(self.prev)
        return False


def is_anomaly_enabled():
    return ANOMALY["enabled"]


def is_anomaly_check_nan_enabled():
    return ANOMALY["check_nan"]

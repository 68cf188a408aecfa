"""torch.utils.checkpoint: activation checkpointing. `checkpoint(fn, *args)` keeps fn's
outputs but not the activations inside it; backward() runs fn again (with the random state it
had, so dropout draws the same mask) and differentiates that second run. The values and
gradients are those of calling fn plainly; the memory held between forward and backward is
fn's inputs and outputs only.

>>> from dualgrad import eager
>>> from dualgrad.eager.utils.checkpoint import checkpoint
>>> x = eager.ones(3, requires_grad=True)
>>> checkpoint(lambda t: (t * 2).sin().sum(), x, use_reentrant=False).backward()
>>> x.grad.tolist() == (2 * (2 * eager.ones(3)).cos()).tolist()
True

NOTE: the first run is recorded (then dropped) to find the parameters fn reads, so their
gradients come out of the recomputation with use_reentrant=False even when no input requires
grad, as torch's non-reentrant checkpoint gives them. With use_reentrant=True (torch's old
default) no input requiring grad means no gradients at all, with torch's warning. Inside
compile() fn is traced as it is: the plan's `memory_budget` chooses what to recompute.
"""
from __future__ import annotations

import warnings

from dualgrad.ops.autodiff import toposort
from dualgrad.ops.core import TRACING, current_trace

from .. import autograd
from ..core import _GRAD, Tensor, _node_of
from ..generator import default_generator
from ..grad_mode import enable_grad, no_grad

__all__ = ["checkpoint", "checkpoint_sequential"]

_REENTRANT_WARNING = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting "
    "in PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants.")


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    """function(*args, **kwargs), its activations recomputed in backward() (see the module)."""
    use_reentrant = _reentrant(use_reentrant)
    if use_reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if context_fn is not None:
        raise NotImplementedError("checkpoint(context_fn=) (selective checkpointing) is not "
                                  "supported by dualgrad")
    if not _GRAD.enabled or (TRACING[0] and current_trace() is not None):
        return function(*args, **kwargs)
    tensors = [a for a in args if isinstance(a, Tensor)]
    if use_reentrant and not any(t.requires_grad for t in tensors):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      UserWarning, stacklevel=2)
        with no_grad():
            return function(*args)
    state = default_generator.get_state() if preserve_rng_state else None
    with enable_grad():
        out = function(*args, **kwargs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    leaves = _leaves(outs, tensors)   # NOTE: both kinds give the parameters' gradients
    run = _Run(function, args, kwargs, state, outs, out)
    del out, outs                         # NOTE: the recorded activations go with them
    return _Recompute.apply(run, len(tensors), *tensors, *leaves)


def checkpoint_sequential(functions, segments, input, use_reentrant=None,  # noqa: A002
                          **kwargs):
    """Run `functions` (an nn.Sequential or a list of modules) in `segments` chunks, each
    but the last checkpointed, as torch's."""
    use_reentrant = _reentrant(use_reentrant)
    fns = list(functions.children()) if hasattr(functions, "children") else list(functions)
    size = len(fns) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(_chain(fns[start:end + 1]), input,  # noqa: A001
                           use_reentrant=use_reentrant, **kwargs)
    return _chain(fns[end + 1:])(input)


def _reentrant(use_reentrant):
    """use_reentrant as given, or torch's default (True) with its warning at the caller's
    caller (the user's line)."""
    if use_reentrant is None:
        warnings.warn(_REENTRANT_WARNING, UserWarning, stacklevel=3)
        return True
    return use_reentrant


def _chain(fns):
    def run(x):
        for f in fns:
            x = f(x)
        return x
    return run


def _leaves(outs, inputs):
    """The tensors requiring grad that the recorded outputs came from, other than `inputs`:
    the parameters function read."""
    given = {id(t) for t in inputs}
    found = toposort([o for o in outs if isinstance(o, Tensor)], _node_of,
                     lambda v: isinstance(v, Tensor) and v.requires_grad)
    return [v for v in found if isinstance(v, Tensor) and v.requires_grad and v.is_leaf
            and id(v) not in given]


class _Run:
    """What backward() needs to run function again: the call, the random state, and the
    outputs' values (detached: the first run's tape is not kept)."""

    def __init__(self, function, args, kwargs, state, outs, out):
        self.function, self.args, self.kwargs, self.state = function, args, kwargs, state
        self.values = [o.detach() if isinstance(o, Tensor) else o for o in outs]
        self.single = not isinstance(out, (tuple, list))
        self.kind = type(out)

    def result(self):
        return self.values[0] if self.single else self.kind(self.values)

    def again(self, inputs):
        """function on `inputs` (the tensor arguments, in order) with the first run's random
        state, recorded; the generator's state is put back afterwards."""
        it = iter(inputs)
        args = [next(it) if isinstance(a, Tensor) else a for a in self.args]
        now = default_generator.get_state() if self.state is not None else None
        if self.state is not None:
            default_generator.set_state(self.state)
        try:
            with enable_grad():
                out = self.function(*args, **self.kwargs)
        finally:
            if now is not None:
                default_generator.set_state(now)
        return [out] if self.single else list(out)


class _Recompute(autograd.Function):
    @staticmethod
    def forward(ctx, run, n, *tensors):
        ctx.run, ctx.n = run, n
        ctx.save_for_backward(*tensors)
        return run.result()

    @staticmethod
    def backward(ctx, *grads):
        tensors = ctx.saved_tensors
        inputs = [t.detach().requires_grad_(t.requires_grad) for t in tensors[:ctx.n]]
        leaves = list(tensors[ctx.n:])
        outs = ctx.run.again(inputs)
        pairs = [(o, g) for o, g in zip(outs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        wrt = [t for t in inputs + leaves if t.requires_grad]
        got = iter(autograd.grad([o for o, _ in pairs], wrt, [g for _, g in pairs],
                                 allow_unused=True) if pairs and wrt else [None] * len(wrt))
        return (None, None, *[next(got) if t.requires_grad else None for t in inputs + leaves])

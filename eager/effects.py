"""What eager code tells an interpreter that is recording it: the declared protocol between
eager and compile() (and eager's own shape check).

While `compile(fn)` traces fn, the trace on this thread's stack (`ops.core.current_trace()`)
must see what fn does besides op calls, so that every call of the compiled function does it
again: which modules ran, random draws, in-place writes, `.grad` read, set or zeroed, an
optimizer's step, DistributedDataParallel's averaging, and what it cannot record (a graph
break). Eager asks `core.traced_step()` (a trace recording a training step's effects) or
`current_trace()` and calls only the members declared here; with no trace, eager does the
thing at once. `compiler.tracer.Trace` implements `TraceEffects`, `checking.Check` implements
`CheckEffects`; tests/eager/test_effects.py checks both, and that eager calls nothing else on
a trace.

>>> from dualgrad.eager.effects import TraceEffects, members
>>> members(TraceEffects)[:3]
['assign', 'average_gradients', 'break_here']
"""
from __future__ import annotations

from typing import Protocol

__all__ = ["TraceEffects", "CheckEffects", "members"]


class TraceEffects(Protocol):
    """The compile() trace, as eager sees it."""

    steps: bool
    """Side effects are recorded and replayed (compile); False: they are a graph break (export)."""

    def touch(self, module):
        """module's forward runs in the trace: its flags are guarded, its buffers fed per call."""

    def draw(self, sample, shape, dtype):
        """A random tensor: `sample()` is drawn anew at every call; returns its tracer."""

    def read(self, t):
        """A tracer of eager tensor t's value as it is at every call."""

    def assign(self, t, value):
        """t is written in place with value (a tracer or an array) at every call."""

    def grad_value(self, leaf):
        """leaf.grad (not None) as a tracer, read at every call."""

    def set_grad_value(self, leaf, value):
        """leaf.grad changed in place to value at every call (gradient clipping)."""

    def zero_grad(self, leaf):
        """leaf.grad filled with zeros in place at every call."""

    def note_grad(self, leaf, how):
        """leaf.grad is read ("read"), replaced ("write") or only remembered ("snap")."""

    def defer_step(self, opt):
        """opt.step(): run eagerly after the recorded graph, at every call."""

    def break_here(self, kind):
        """What fn does here cannot be recorded: a graph break of `kind` at the user's line."""

    def average_gradients(self, buckets, find_unused=False):
        """DistributedDataParallel's buckets: the graph averages these gradients over ranks."""

    def wrap(self, g, requires_grad):
        """A tracer of this trace for graph tensor g (a custom Function's backward runs on it)."""

    def lift(self, a):
        """a (a tracer of this trace, an eager tensor or an array) as a tensor of its graph."""


class CheckEffects(Protocol):
    """`eager.check`'s interpreter (checking.py), as the rest of eager sees it."""

    steps_done: int
    """Optimizer steps completed on meta tensors."""

    def host_data(self, t):
        """Host data made in the user's loop: the meta batch to use instead (or t)."""

    def stepped(self):
        """The first optimizer step has run: the check is over."""


def members(protocol) -> list:
    """The names a protocol declares (its attributes and methods), sorted."""
    own = set(vars(protocol).get("__annotations__", {}))
    own |= {n for n, v in vars(protocol).items() if callable(v) and not n.startswith("_")}
    return sorted(own)

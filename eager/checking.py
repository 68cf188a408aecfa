"""Shape bugs before the first batch: one training step on meta tensors with a symbolic batch.

`check(model, loss_fn, example_shapes)` runs `loss_fn(model(*inputs), target)` forward,
backward and (given one) an optimizer step on meta tensors (eager/meta.py): only the ops'
shape rules run, so it takes milliseconds and no data. A dim written as `eager.Dim("N")`
stays symbolic; code that fixes it (`x.view(32, -1)`, a layer sized for one batch) is
reported with the symbol, the value and the user's line. A Python branch on a tensor's value
cannot be decided on shapes: it is reported as not explored, never guessed.

>>> from dualgrad import eager
>>> from dualgrad.eager import nn
>>> from dualgrad.eager.nn import functional as F
>>> N = eager.Dim("N")
>>> model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(64, 10))
>>> report = eager.check(model, F.cross_entropy, [(N, 64), ((N,), "int64")])
>>> report.ok, report.findings[0].kind
(False, 'error')
>>> print(report.findings[0].message.splitlines()[0])      # doctest: +ELLIPSIS
linear: input (N, 32) has 32 features but weight (10, 64) expects 64 ...

`Check` is the interpreter behind it and behind `dualgrad check script.py`: on the trace
stack (`ops.core.tracing`) it runs ops with a meta input as shape rules (parameters, still
real cpu tensors, are read for their shapes), and turns host data made inside a loop
(`from_numpy`, `tensor`, a DataLoader's batches) into meta batches whose leading dim is the
symbol `N`.
"""
from __future__ import annotations

import ast
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from dualgrad.ops.core import bind_args, tracing, user_frame, where_str
from dualgrad.ops.symbolic import Dim, SymbolicValueError

from . import meta as _meta
from .core import Tensor

__all__ = ["check", "Check", "CheckReport", "Finding", "StepDone"]


class StepDone(BaseException):
    """Ends a checked script after its first optimizer step (not an Exception: a user's
    `except Exception` must not swallow it)."""


@dataclass
class Finding:
    """One thing a check found: kind is "error", "warning" or "unexplored"."""
    kind: str
    message: str
    file: str | None = None
    line: int | None = None
    exc: BaseException | None = field(default=None, repr=False, compare=False)

    def __str__(self):
        where = f"{where_str((self.file, self.line))}: " if self.line else ""
        return f"{where}{self.kind}: {self.message}"


@dataclass
class CheckReport:
    """What one check found, in order, and how long the shape-only run took."""
    findings: list = field(default_factory=list)
    seconds: float = 0.0
    steps: int = 0           # optimizer steps completed (shape-wise)
    symbols: dict = field(default_factory=dict)   # symbol -> (batch size, where first made)
    kind: str = "eager"      # or "graph" (`dualgrad check` on a graph script)

    @property
    def ok(self) -> bool:
        return not any(f.kind in ("error", "unexplored") for f in self.findings)

    def of(self, kind):
        return [f for f in self.findings if f.kind == kind]

    def __str__(self):
        head = (f"checked {self.steps} step(s) on meta tensors in {self.seconds * 1e3:.1f} ms: "
                f"{len(self.of('error'))} error(s), {len(self.of('warning'))} warning(s), "
                f"{len(self.of('unexplored'))} not explored")
        return "\n".join([head] + [f"  {f}" for f in self.findings])


class Check:
    """The check's interpreter (see the module docstring). `level` ties with the meta
    engine's, so on the trace stack it receives every call of this thread."""
    level = _meta.MetaEngine.level

    def __init__(self, batch="N", stop_after_step=True):
        self.symbol = batch if isinstance(batch, Dim) else Dim(batch)
        self.batch = None               # the leading dim of the first batch
        self.first_batch = None         # (file, line) it was made at
        self.t_first = None             # perf_counter() when the first meta batch was made
        self.stop_after_step = stop_after_step
        # NOTE: not `steps`: core.traced_step() reads a trace's `steps` (effects.TraceEffects)
        self.steps_done = 0
        self._loops = {}                # file -> [(first, last) line of each loop]

    def apply(self, op, args, attrs):
        if any([type(getattr(a, "_array", None)) is _meta.MetaArray for a in args]):
            return _meta.run(op, args, attrs, mixed=True)
        return bind_args(op, args, attrs)

    def host_data(self, t):
        """A tensor made from host data: inside a loop of the user's code (the training
        loop's batches), a meta tensor whose leading dim is the symbol when it has the first
        batch's size; elsewhere (a dataset built once) the real tensor."""
        loc = user_frame()
        if not t.shape or loc is None or not self._in_loop(*loc):
            return t
        if self.batch is None and t.shape[0] > 1:
            self.batch, self.first_batch = t.shape[0], loc
            self.t_first = time.perf_counter()
        shape = tuple(t.shape)
        if shape[0] == self.batch:
            shape = (self.symbol,) + shape[1:]
        return _meta.empty(shape, t.dtype, t.requires_grad)

    def _in_loop(self, file, line) -> bool:
        if file not in self._loops:
            self._loops[file] = _loop_spans(file)
        return any(a <= line <= b for a, b in self._loops[file])

    def stepped(self):
        """An optimizer step on meta gradients finished (meta.optimizer_step)."""
        self.steps_done += 1
        if self.stop_after_step:
            raise StepDone


def _loop_spans(file):
    try:
        with open(file) as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return []
    return [(n.lineno, n.end_lineno) for n in ast.walk(tree)
            if isinstance(n, (ast.For, ast.While, ast.AsyncFor))]


# -- from code ------------------------------------------------------------------------------------
def _example(x, symbol):
    """A meta input from an example: a meta tensor, a shape, or (shape, dtype)."""
    if isinstance(x, Tensor):
        return x if _meta.is_meta(x) else _meta.to_meta(x)
    if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], (tuple, list)) \
            and not isinstance(x[1], (int, Dim)):
        return _meta.empty(x[0], x[1])
    return _meta.empty(tuple(x))


def check(model, loss_fn, example_shapes, optimizer=None) -> CheckReport:
    """One step of `loss_fn(model(*inputs), target)` on meta tensors, where `example_shapes`
    lists the model's inputs then the target, each a shape (ints and `Dim`s; float32), a
    `(shape, dtype)` pair or a meta tensor. Backward runs, and the optimizer's step when one
    is given; the parameters' `.grad` are as before afterwards. Returns a CheckReport."""
    examples = [_example(x, None) for x in example_shapes]
    *inputs, target = examples
    params = list(model.parameters())
    grads = [p.grad for p in params]
    tr = Check(stop_after_step=False)
    report = CheckReport()
    t0 = time.perf_counter()
    try:
        with tracing(tr), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                loss = loss_fn(model(*inputs), target)
                loss.backward()
                if optimizer is not None:
                    optimizer.step()
            except Exception as e:  # noqa: BLE001 - a finding, reported
                report.findings.append(finding(e))
        report.findings[:0] = [warned(w) for w in caught]
    finally:
        for p, g in zip(params, grads):
            p.grad = g
    report.seconds, report.steps = time.perf_counter() - t0, tr.steps_done
    return report


# -- findings -------------------------------------------------------------------------------------
def warned(w) -> Finding:
    return Finding("warning", str(w.message), w.filename, w.lineno)


def finding(e, skip=()) -> Finding:
    """The finding an exception out of a checked step makes: a data-dependent branch or
    value is "unexplored" (with its line), anything else an "error" at its line."""
    loc = getattr(e, "location", None) or _innermost_user(e, skip)
    file, line = loc if loc else (None, None)
    if isinstance(e, _meta.DataDependentError) or isinstance(e, TypeError) and \
            "meta tensor used as an index" in str(e):
        what = "data-dependent branch" if "Boolean value" in str(e) else "data-dependent value"
        return Finding("unexplored", f"not explored: {what} at line {line}: {e}", file, line, e)
    if isinstance(e, SymbolicValueError):
        return Finding("unexplored", f"not explored: Python needs a number for a symbolic dim "
                                     f"at line {line}: {e}", file, line, e)
    return Finding("error", f"{type(e).__name__}: {e}", file, line, e)


def _innermost_user(e, skip):
    import traceback
    from dualgrad.ops.core import FRAMEWORK_DIRS
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if not f.filename.startswith(FRAMEWORK_DIRS + tuple(skip))
              and not f.filename.startswith("<")]
    return (frames[-1].filename, frames[-1].lineno) if frames else None


def shape_of(t):
    """A tensor's shape as a check prints it (symbolic dims by name)."""
    return tuple(t.shape) if isinstance(t, Tensor) else np.shape(t)

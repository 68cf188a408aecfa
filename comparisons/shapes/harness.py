"""Run one bug file and say where its shape error surfaced: the child side of the runner.

    python -m dualgrad.comparisons.shapes.harness FILE MODE      # prints one JSON line (see MARK)

The bug file runs as `__main__`. In eager and graph mode it runs unchanged; compiled mode
runs the *eager* file with its top-level `def loss_fn` decorated by `compiler.compile`
(`compiled_code`: the decorator is added to the parsed module, which is compiled with the
file's own name, so every line number and traceback frame is the user's). Hooks count training steps without the file
knowing: in eager (and compiled) mode a step is one `Optimizer.step()`; in graph mode a step
is one `Session.run` with a non-empty feed (initialiser runs have none). In compiled mode
the record also holds how many traces the compiled functions made (`traces`) and, from the
traceback, whether the error left a call that was tracing a new signature
(`compiled_call`: "trace"), one replaying a traced plan ("replay"), or came from eager code
around the compiled calls (None). The phase follows:

- `build`: raised in graph mode before any `Session.run` started (graph construction);
- `first run`: raised before the first training step completed;
- `step k`: raised during training step k (k - 1 steps completed);
- `never`: the script ran to its end (warnings, if any, are recorded with their step).

The record also holds the message's `file:line` locations (the `at FILE:LINE` that ops/,
eager/ and graph/ append), the innermost traceback frame in the bug file, and whether each
is the line marked `# BUG`. `run_file` can be called in-process as well.
"""
from __future__ import annotations

import json
import os
import re
import runpy
import sys
import time
import traceback
import warnings

MARK = "@@dualgrad-shapes@@ "
MODES = ("eager", "graph", "compiled", "check")
SOURCE = {"eager": "eager", "graph": "graph", "compiled": "eager",   # mode -> file it runs
          "check": "eager"}
COMPILED_FN = "loss_fn"     # compiled mode wraps this top-level function of the eager file
_COMPILE = "__dualgrad_compile__"

# `at ops/x.py:12`, `defined at bugs/a.py:30`, `created at /abs/b.py:7`
_LOC = re.compile(r"(?:(defined|created) )?at (?P<file>[^\s(),'\"]+\.py):(?P<line>\d+)")
_OP_NAMED = re.compile(r"^[a-z][a-z0-9_]*: |\(op [a-z][a-z0-9_]*\)")
_DIM = r"(?:\d+|\?|[A-Za-z_]\w*(?:\*\d+)?(?: [+-] \d+)?)"     # 32, ?, N, N*8, N - 1
_SHAPE = re.compile(rf"\({_DIM}(?:, {_DIM})*,?\)")


def bug_line(path) -> int | None:
    """The line of `path` marked with a `# BUG` comment (1-based)."""
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if re.search(r"#\s*BUG\b", line):
                return i
    return None


def compiled_code(path):
    """The eager script at `path` as compiled mode runs it: the top-level `def loss_fn` gets
    the decorator `@compiler.compile`, as a user would write it. Only the decorator list
    changes, so line numbers stay those of the file."""
    import ast
    with open(path) as f:
        tree = ast.parse(f.read(), filename=path)
    fns = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == COMPILED_FN]
    if len(fns) != 1:
        raise ValueError(f"{path}: compiled mode needs one top-level `def {COMPILED_FN}` "
                         f"(the forward pass and the loss), found {len(fns)}")
    fn = fns[0]
    fn.decorator_list.insert(0, ast.copy_location(ast.Name(_COMPILE, ast.Load()), fn))
    return compile(ast.fix_missing_locations(tree), path, "exec")


def run_script(path, mode):
    """Run the script at `path` as `__main__` the way `mode` runs it (see compiled_code)."""
    path = os.path.abspath(path)
    if mode != "compiled":
        runpy.run_path(path, run_name="__main__")
        return
    import types
    from dualgrad import compiler
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=path, __builtins__=__builtins__, **{_COMPILE: compiler.compile})
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main          # NOTE: as runpy.run_path does
    try:
        exec(compiled_code(path), main.__dict__)
    finally:
        sys.modules["__main__"] = saved


class _Counter:
    def __init__(self):
        self.steps = 0          # training steps completed
        self.runs = 0           # Session.run calls started (graph)
        self.in_run = False
        self.compiled = []      # every compiled function made (compiled mode)
        self.t0 = time.perf_counter()
        self.warnings = []


def _install(mode, c: _Counter):
    """Patch the step points; returns a function that undoes the patches."""
    undo = []
    if mode in ("eager", "compiled"):
        from dualgrad.eager import optim
        orig_step = optim.Optimizer.step

        def step(self, *a, **k):
            out = orig_step(self, *a, **k)
            c.steps += 1
            return out
        optim.Optimizer.step = step
        undo.append(lambda: setattr(optim.Optimizer, "step", orig_step))
    if mode == "compiled":
        # NOTE: only construction is hooked. A hook around a compiled call would be the first
        # frame outside the framework, so messages would say `at harness.py:N`
        from dualgrad.compiler.compiled import Compiled
        orig_init = Compiled.__init__

        def init(self, *a, **k):
            orig_init(self, *a, **k)
            c.compiled.append(self)
        Compiled.__init__ = init
        undo.append(lambda: setattr(Compiled, "__init__", orig_init))
    if mode == "graph":
        from dualgrad import graph
        orig_run = graph.Session.run

        def run(self, fetches, feed_dict=None, *a, **k):
            c.runs += 1
            c.in_run = True
            try:
                out = orig_run(self, fetches, feed_dict, *a, **k)
            finally:
                c.in_run = False
            if feed_dict:
                c.steps += 1
            return out
        graph.Session.run = run
        undo.append(lambda: setattr(graph.Session, "run", orig_run))
        graph.reset_default_graph()
    orig_show = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        c.warnings.append({"category": category.__name__, "message": str(message),
                           "file": filename, "line": lineno, "step": c.steps + 1})
    warnings.showwarning = show
    undo.append(lambda: setattr(warnings, "showwarning", orig_show))
    return lambda: [u() for u in reversed(undo)]


def _compiled_call(exc) -> str | None:
    """The compiled call the error left: "trace" (one tracing a new signature), "replay" (one
    running a traced plan), or None (eager code around the compiled calls)."""
    trace = sys.modules.get("dualgrad.compiler.compiled")
    trace_py = trace.__file__ if trace else None
    names = {f.name for f in traceback.extract_tb(exc.__traceback__) if f.filename == trace_py}
    return "trace" if "_trace" in names else "replay" if "__call__" in names else None


def _phase(mode, c: _Counter) -> str:
    if mode == "graph" and c.runs == 0:
        return "build"
    return "first run" if c.steps == 0 else f"step {c.steps + 1}"


def _same_file(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def message_locations(message, cwd=None) -> list[dict]:
    """Every `at FILE:LINE` in an error message, with absolute paths."""
    out = []
    for m in _LOC.finditer(message):
        f = m.group("file")
        f = f if os.path.isabs(f) else os.path.join(cwd or os.getcwd(), f)
        out.append({"file": os.path.normpath(f), "line": int(m.group("line")),
                    "kind": m.group(1) or "at"})
    return out


def _format(exc) -> str:
    """The traceback as the user would see it running the file: without the harness frames."""
    te = traceback.TracebackException.from_exception(exc)
    for t in _chain(te):
        t.stack = traceback.StackSummary.from_list(
            [f for f in t.stack if f.filename != __file__ and "runpy" not in f.filename])
    return "".join(te.format())


def _chain(te):
    while te is not None:
        yield te
        te = te.__cause__ or te.__context__


def _analyse(exc, path, line, mode):
    from dualgrad.ops.core import FRAMEWORK_DIRS
    message = str(exc) if str(exc) else type(exc).__name__
    frames = traceback.extract_tb(exc.__traceback__)
    user = [f for f in frames if _same_file(f.filename, path)]
    locs = message_locations(message)
    in_bug_file = [loc for loc in locs if _same_file(loc["file"], path)]
    first = locs[0] if locs else None
    return {
        "exc_type": type(exc).__name__,
        "exc_module": type(exc).__module__,
        "first_line": message.splitlines()[0],
        "message": message,
        "traceback": _format(exc),
        "msg_locs": locs,
        "msg_line": in_bug_file[0]["line"] if in_bug_file else None,
        "msg_file": first["file"] if first else None,
        "msg_points_to_bug": any(loc["line"] == line for loc in in_bug_file),
        "msg_in_framework": bool(first) and os.path.abspath(first["file"]).startswith(FRAMEWORK_DIRS),
        "tb_line": user[-1].lineno if user else None,
        "tb_is_bug": bool(user) and user[-1].lineno == line,
        "tb_innermost": f"{frames[-1].filename}:{frames[-1].lineno}" if frames else None,
        "names_op": bool(_OP_NAMED.search(message)),
        "names_shapes": bool(_SHAPE.search(message)),
    }


def preload(mode):
    """Import the engine and load the digits before the clock starts: times measure the
    model (build, run, kernel compilation), not imports or reading the data from disk."""
    import importlib
    for name in {"eager": ("eager",), "graph": ("graph", "compiler"),
                 "compiled": ("eager", "compiler"), "check": ("eager",)}[mode]:
        try:
            importlib.import_module(f"dualgrad.{name}")
        except ImportError:
            pass
    from dualgrad.comparisons import data
    shared = os.environ.get(DIGITS_ENV)
    if shared and not getattr(data.digits, "shared", False):
        data.digits = _shared_digits(data, shared)
    data.digits()


DIGITS_ENV = "DUALGRAD_SHAPES_DIGITS"


def save_digits(path):
    """Write the default digits split to `path` (.npz) for the children (see preload)."""
    import numpy as np
    from dualgrad.comparisons.data import digits
    d = digits()
    np.savez(path, x_train=d.x_train, y_train=d.y_train, x_test=d.x_test, y_test=d.y_test)


def _shared_digits(data, path):
    """`data.digits` reading the default split the runner saved once, so that no child
    spends a second importing scikit-learn; other arguments go to the original."""
    import numpy as np
    original = data.digits
    with np.load(path) as z:
        arrays = {k: z[k] for k in ("x_train", "y_train", "x_test", "y_test")}
    for a in arrays.values():
        a.setflags(write=False)
    d = data.Digits(**arrays)

    def digits(seed=0, test_fraction=0.25):
        return d if (seed, test_fraction) == (0, 0.25) else original(seed, test_fraction)
    digits.shared = True
    return digits


def run_file(path, mode) -> dict:
    """Run the bug file `path` (`<bug>_eager.py` for eager and compiled mode) in `mode` in
    this process and return its record."""
    path = os.path.abspath(path)
    name = os.path.basename(path)[:-len(f"_{SOURCE[mode]}.py")]
    rec = {"bug": name, "mode": mode, "file": path, "bug_line": bug_line(path)}
    preload(mode)
    if mode == "check":
        return _checked(path, rec)
    c = _Counter()
    undo = _install(mode, c)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            c.t0 = time.perf_counter()
            run_script(path, mode)
        rec.update(status="silent", phase="never")
    except Exception as exc:  # noqa: BLE001 - recording the failure is the point
        seconds = time.perf_counter() - c.t0
        rec.update(status="raised", phase=_phase(mode, c), seconds=seconds,
                   in_session_run=c.in_run, **_analyse(exc, path, rec["bug_line"], mode))
        if mode == "compiled":
            rec["compiled_call"] = _compiled_call(exc)
    finally:
        undo()
    rec.setdefault("seconds", time.perf_counter() - c.t0)
    rec["steps"] = c.steps
    if mode == "compiled":
        rec["traces"] = sum(f.traces for f in c.compiled)
    rec["warnings"] = _dedupe(c.warnings, path, rec["bug_line"])
    return rec


def _checked(path, rec) -> dict:
    """Check mode: `dualgrad check` on the eager script (comparisons/check_cli.py): meta
    tensors with a symbolic batch, so no step runs on data; its first error, else the first
    part it could not explore, else nothing, with its warnings."""
    from ..check_cli import run_script
    report = run_script(path)
    line = rec["bug_line"]
    rec.update(seconds=report.seconds, steps=0, checked_steps=report.steps)
    errors, unexplored = report.of("error"), report.of("unexplored")
    if errors:
        rec.update(status="raised", phase="before data",
                   **_analyse(errors[0].exc, path, line, "check"))
    elif unexplored:
        u = unexplored[0]
        rec.update(status="unexplored", phase="not explored", message=u.message,
                   first_line=u.message.splitlines()[0], msg_line=u.line,
                   msg_points_to_bug=_same_file(u.file, path) and u.line == line)
    else:
        rec.update(status="silent", phase="never")
    rec["warnings"] = [{"category": "UserWarning", "message": w.message, "file": w.file,
                        "line": w.line, "step": 1, "count": 1,
                        "points_to_bug": _same_file(w.file, path) and w.line == line}
                       for w in report.of("warning")]
    return rec


def _dedupe(ws, path, line):
    """First occurrence of each distinct warning, with its count and whether it names the bug."""
    out = {}
    for w in ws:
        key = (w["category"], re.sub(r"\(at [^)]*\)", "", w["message"]))
        if key in out:
            out[key]["count"] += 1
            continue
        locs = message_locations(w["message"])
        w["points_to_bug"] = (_same_file(w["file"], path) and w["line"] == line) or any(
            _same_file(loc["file"], path) and loc["line"] == line for loc in locs)
        out[key] = {**w, "count": 1}
    return list(out.values())


def main(argv=None):
    path, mode = (argv or sys.argv[1:])[:2]
    rec = run_file(path, mode)
    sys.stdout.flush()
    print(MARK + json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()

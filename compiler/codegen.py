"""Fused-loop code generator: one SSA program over an R x C view -> one numba kernel.

The fusion pass hands each group of elementwise ops and last-axis reductions to
`compile_fused` as a `FusedSpec`; what comes back is a callable that runs the whole group
as a single compiled loop, with no temporaries.

    >>> import numpy as np
    >>> spec = FusedSpec(
    ...     inputs=(("float32", "full"),),
    ...     nodes=(("in", 0), ("const", 2.0, "float32"),
    ...            ("ew", "({0} * {1})", (0, 1), "float32"),
    ...            ("reduce", "sum", 2, "float32")),
    ...     outputs=(2, 3))
    >>> fn = compile_fused(spec)
    >>> y, s = fn(2, 3, np.arange(6, dtype=np.float32).reshape(2, 3))
    >>> y.tolist(), s.tolist()
    ([[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]], [6.0, 24.0])

Two loop shapes are generated (see `_Source`):

* flat: no reduction and only full/scalar inputs -> one loop over R*C elements, so that a
  single long row still runs on every core;
* rows: otherwise -> a loop over rows; per row, one pass over the columns for each level of
  reductions (LayerNorm: mean, then variance), recomputing the elementwise values a pass
  needs from the inputs (the row stays in cache), then one pass writing the full outputs.
  An expensive value that a later pass needs again (softmax's exp(x - max)) is kept in a
  scratch row instead of being recomputed.

Each spec becomes a real `.py` module under `<cache>/kernels/` (named by a hash of the spec,
the generated source, the prelude and CODEGEN_VERSION) whose kernels get numba's disk cache
in the same checked directory, so a second process loads machine code instead of compiling
(`compiler/kernel_cache.py` treats that directory as a trust boundary). Two variants
live in the module: `kernel_serial` (compiled by `compile_fused`) and `kernel_parallel`
(`prange`, compiled on the first call with at least PARALLEL_MIN_ELEMENTS elements); above
that size both are timed and the faster runs (see FusedKernel._choose).

numba options, each measured against hand-written numba (docs/compiler.md, Generated kernels): error_model='numpy' (a zero-check on
every `/` blocks vectorisation), typed constants (a Python float literal turns float32 math
into float64), FASTMATH below (reductions only vectorise with `reassoc`), and rational
tanh/erf/exp/log approximations from `_prelude` (no SVML: libm tanhf in a loop is 5x slower
than NumPy).
"""
from __future__ import annotations

import hashlib
import math
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import _prelude, kernel_cache
from ._template import DTYPES, FLOATS, TemplateError, cast, lower_template, typed_literal

CODEGEN_VERSION = 3
KINDS = ("full", "row", "col", "scalar")
REDUCTIONS = ("sum", "max", "min")
# NOTE: fastmath without 'nnan'/'ninf': reductions need only 'reassoc' to vectorise, and
# keeping NaN/inf semantics makes isnan-style templates (x != x), -inf max seeds and NaN
# propagation behave as in NumPy.
FASTMATH = frozenset({"nsz", "arcp", "contract", "afn", "reassoc"})
# Below this many elements a parallel launch costs more than it saves (a prange kernel costs
# ~2 us even on 4 elements; 2**16 float32 elements stream in ~10 us on one core).
PARALLEL_MIN_ELEMENTS = int(os.environ.get("DUALGRAD_PARALLEL_MIN_ELEMENTS", 1 << 16))
PROBE_EVERY = 64
# Full values worth keeping in a scratch row (one per block of rows) rather than computing
# again in a later pass: vectorised exp costs ~0.55 ns/element, an L1/L2 load far less.
EXPENSIVE = ("exp(", "log(", "log1p(", "tanh(", "erf(")  # and ** with a general exponent
MAX_STASH = 4
# Columns a floating sum adds in one accumulator before the block's sum goes into the row's
# compensated float64 total (see _Source.reduction_pass): long enough that the per-block
# step costs nothing measurable, short enough that a block's own error stays ~1e-7.
SUM_BLOCK = 1024


class CodegenError(Exception):
    """The spec cannot be compiled into a fused kernel; the message is a one-line reason."""


# -- the spec ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class FusedSpec:
    """An SSA program over an R x C view. See the module docstring for an example.

    inputs:  ((dtype, kind), ...) with kind in full (R, C) | row (R,) | col (C,) | scalar ().
    nodes:   ("in", i) | ("const", value, dtype) | ("ew", template, (args...), dtype) |
             ("reduce", "sum"|"max"|"min", arg, dtype) | ("dim", "R"|"C", dtype) (the
             run-time row or column count as a scalar, e.g. for a mean over unknown C);
             node k uses only nodes < k.
    outputs: node indices; each is returned with the shape of its kind.
    """
    inputs: tuple
    nodes: tuple
    outputs: tuple

    def __post_init__(self):
        object.__setattr__(self, "inputs", tuple((str(d), str(k)) for d, k in self.inputs))
        object.__setattr__(self, "nodes", tuple(_norm_node(n) for n in self.nodes))
        object.__setattr__(self, "outputs", tuple(int(o) for o in self.outputs))
        _validate(self)

    def canonical(self) -> str:
        """A stable text form (dtypes, kinds, templates, constants): the cache key's base."""
        return repr((self.inputs, self.nodes, self.outputs))


def _norm_node(node):
    node = tuple(node)
    op = node[0]
    if op == "in":
        return ("in", int(node[1]))
    if op == "const":
        dt = str(node[2])
        conv = {"bool": bool, "int32": int, "int64": int}.get(dt, float)
        return ("const", conv(node[1]), dt)
    if op == "ew":
        return ("ew", str(node[1]), tuple(int(a) for a in node[2]), str(node[3]))
    if op == "reduce":
        return ("reduce", str(node[1]), int(node[2]), str(node[3]))
    if op == "dim":
        return ("dim", str(node[1]), str(node[2]))
    raise ValueError(f"FusedSpec: unknown node op {op!r} in {node!r}")


def _validate(spec):
    for dt, kind in spec.inputs:
        if dt not in DTYPES or kind not in KINDS:
            raise ValueError(f"FusedSpec: input ({dt!r}, {kind!r}): dtype must be one of "
                             f"{DTYPES} and kind one of {KINDS}")
    for k, node in enumerate(spec.nodes):
        if node[0] == "dim" and node[1] not in ("R", "C"):
            raise ValueError(f"FusedSpec: node {k}: dim must be 'R' or 'C', got {node[1]!r}")
        refs = {"in": (), "const": (), "dim": (), "ew": node[2] if node[0] == "ew" else (),
                "reduce": (node[2],) if node[0] == "reduce" else ()}[node[0]]
        if any(not 0 <= a < k for a in refs):
            raise ValueError(f"FusedSpec: node {k} {node!r} may only use nodes 0..{k - 1}")
        if node[0] == "in" and not 0 <= node[1] < len(spec.inputs):
            raise ValueError(f"FusedSpec: node {k} reads input {node[1]}, "
                             f"but there are {len(spec.inputs)} inputs")
        if node[0] == "reduce" and node[1] not in REDUCTIONS:
            raise ValueError(f"FusedSpec: node {k}: reduction {node[1]!r} not in {REDUCTIONS}")
        if node[0] != "in" and node[-1] not in DTYPES:
            raise ValueError(f"FusedSpec: node {k}: dtype {node[-1]!r} not in {DTYPES}")
    if not spec.outputs or any(not 0 <= o < len(spec.nodes) for o in spec.outputs):
        raise ValueError(f"FusedSpec: outputs {spec.outputs} must be node indices "
                         f"0..{len(spec.nodes) - 1} (at least one)")


# -- analysis: kind, dtype and reduction level of every node -----------------------------------
def _args(node):
    return node[2] if node[0] == "ew" else (node[2],) if node[0] == "reduce" else ()


def combine_roles(kinds):
    """The role of an elementwise result from its inputs' (full wins; row with col is full)."""
    ks = set(kinds) - {"scalar"}
    if "full" in ks or ks == {"row", "col"}:
        return "full"
    return ks.pop() if ks else "scalar"


class _Program:
    """Per-node kind, dtype and level (how many reductions deep it sits)."""

    def __init__(self, spec: FusedSpec):
        self.spec = spec
        self.kind, self.dtype, self.level = [], [], []
        for node in spec.nodes:
            op, args = node[0], _args(node)
            if op == "in":
                dt, kind = spec.inputs[node[1]]
            elif op in ("const", "dim"):
                dt, kind = node[2], "scalar"
            elif op == "ew":
                dt, kind = node[3], combine_roles(self.kind[a] for a in args)
            else:
                dt, kind = node[3], "row"
            lvl = max((self.level[a] for a in args), default=0) + (op == "reduce")
            self.kind.append(kind)
            self.dtype.append(dt)
            self.level.append(lvl)
        self.needed = self.cone(spec.outputs, lambda k: True)
        self.flat = all(spec.nodes[k][0] != "reduce" and self.kind[k] in ("full", "scalar")
                        for k in self.needed)
        self.depth = max((self.level[k] for k in self.needed), default=0)

    def cone(self, targets, inside, stop=frozenset()):
        """Sorted nodes reachable from targets through nodes for which inside(k) holds
        (nodes in `stop` are included but not looked through)."""
        seen, stack = set(), [t for t in targets if inside(t)]
        while stack:
            k = stack.pop()
            if k not in seen:
                seen.add(k)
                if k not in stop:
                    stack.extend(a for a in _args(self.spec.nodes[k]) if inside(a))
        return sorted(seen)


# -- source generation -------------------------------------------------------------------------
class _Source:
    """Builds the text of one kernel body (shared by the serial and the parallel variant)."""

    def __init__(self, prog: _Program):
        self.p, self.spec = prog, prog.spec
        self.lines: list[str] = []
        self.names: dict[int, str] = {}   # node -> variable in the scope being emitted
        self.arrays: dict[int, str] = {}  # input -> variable that holds it, if not in<i>
        self.stash: dict[int, int] = {}   # node -> pass that keeps it in a scratch row

    def out(self, text, depth):
        self.lines.append("    " * depth + text)

    def ref(self, k):
        if self.spec.nodes[k][0] == "const":
            return f"K{k}"
        return self.names[k]

    def emit_node(self, k, depth, index, tag):
        """Emit node k (not a reduction) at indentation `depth`; index: how inputs are read."""
        node, dt = self.spec.nodes[k], self.p.dtype[k]
        var = f"v{k}{tag}"
        if node[0] == "const":
            return
        if node[0] == "in":
            kind = self.spec.inputs[node[1]][1]
            arr = self.arrays.get(node[1], f"in{node[1]}")
            self.out(f"{var} = {arr}[{index[kind]}]", depth)
        elif node[0] == "dim":
            self.out(f"{var} = {cast(node[1], 'int64', dt)}", depth)
        else:
            args = [(self.ref(a), self.p.dtype[a]) for a in node[2]]
            consts = {i: self.spec.nodes[a][1] for i, a in enumerate(node[2])
                      if self.spec.nodes[a][0] == "const"}
            body: list[str] = []
            try:
                res, _ = lower_template(node[1], args, consts, dt, f"{var}_", body)
            except TemplateError as e:
                raise CodegenError(f"node {k}: {e}") from None
            for line in body:
                self.out(line, depth)
            var = res
        self.names[k] = var

    def emit_all(self, nodes, depth, index, tag=""):
        for k in nodes:
            if self.spec.nodes[k][0] != "reduce":
                self.emit_node(k, depth, index, tag)

    def outputs_of(self, kinds):
        return [(o, k) for o, k in enumerate(self.spec.outputs) if self.p.kind[k] in kinds]

    def scalars(self, depth):
        p = self.p
        self.emit_all([k for k in p.needed if p.kind[k] == "scalar"], depth, {"scalar": "()"})
        for o, k in self.outputs_of(("scalar",)):
            self.out(f"out{o}[()] = {self.ref(k)}", depth)

    # -- flat: one loop over R*C ------------------------------------------------------------------
    def flat(self):
        self.out("n = R * C", 1)
        self.scalars(1)
        full = self.outputs_of(("full",))
        if not full:
            return
        # NOTE: full arrays arrive as C-contiguous (R, C); a 1-D view makes one flat loop.
        for i, (_, kind) in enumerate(self.spec.inputs):
            if kind == "full":
                self.out(f"in{i}f = in{i}.reshape(n)", 1)
                self.arrays[i] = f"in{i}f"
        for o, _ in full:
            self.out(f"out{o}f = out{o}.reshape(n)", 1)
        self.out("for e in RANGE(n):", 1)
        idx = {"full": "e", "scalar": "()"}
        self.emit_all(self.p.cone([k for _, k in full], lambda a: self.p.kind[a] == "full"),
                      2, idx)
        for o, k in full:
            self.out(f"out{o}f[e] = {self.ref(k)}", 2)

    # -- rows: per row, one column pass per reduction level, then the write pass --------------
    def rows(self):
        p = self.p
        self.scalars(1)
        idx = {"full": "i, j", "col": "j", "row": "i", "scalar": "()"}
        cols = self.outputs_of(("col",))
        if cols:
            self.out("for j in range(C):", 1)
            self.column_pass([k for _, k in cols], 2, idx, "c")
            for o, k in cols:
                self.out(f"out{o}[j] = {self.ref(k)}", 2)
        row_nodes = [k for k in p.needed if p.kind[k] == "row"]
        passes = [[k for k in row_nodes if p.level[k] == lvl and self.spec.nodes[k][0] == "reduce"]
                  for lvl in range(1, p.depth + 1)]
        full = self.outputs_of(("full",))
        targets = [[self.spec.nodes[k][2] for k in reds] for reds in passes]
        targets.append([k for _, k in full])
        self.plan_stash(targets)
        d = self.row_loop()
        for lvl in range(p.depth + 1):
            if lvl and passes[lvl - 1]:
                self.reduction_pass(passes[lvl - 1], lvl, idx, d)
            self.emit_all([k for k in row_nodes if p.level[k] == lvl], d, idx)
        if full:
            self.out("for j in range(C):", d)
            self.column_pass(targets[-1], d + 1, idx, "w", len(targets) - 1)
            for o, k in full:
                self.out(f"out{o}[i, j] = {self.ref(k)}", d + 1)
        for o, k in self.outputs_of(("row",)):
            self.out(f"out{o}[i] = {self.ref(k)}", d)

    def row_loop(self):
        """Open the loop over rows; return the indentation of its body."""
        if not self.stash:
            self.out("for i in RANGE(R):", 1)
            return 2
        # NOTE: rows go in blocks so that each block allocates its scratch rows once.
        self.out("bs = max(1, R // 64)", 1)
        self.out("for blk in RANGE((R + bs - 1) // bs):", 1)
        for k in self.stash:
            self.out(f"st{k} = np.empty(C, np.{self.p.dtype[k]})", 2)
        self.out("for i in range(blk * bs, min(R, blk * bs + bs)):", 2)
        return 3

    def plan_stash(self, targets):
        """Choose expensive full values that a later pass needs again (softmax's exp(x - max)):
        the first pass that computes one stores it in a scratch row, later passes load it."""
        cones = [set(self.p.cone(t, self._in_pass)) for t in targets]
        for n, cone in enumerate(cones):
            for k in sorted(cone):
                if (len(self.stash) < MAX_STASH and k not in self.stash and self._expensive(k)
                        and self.p.kind[k] == "full"
                        and any(k in later for later in cones[n + 1:])):
                    self.stash[k] = n
            stored = set(self.stash)
            cones[n + 1:] = [set(self.p.cone(t, self._in_pass, stored)) for t in targets[n + 1:]]

    def _in_pass(self, a):
        return self.p.kind[a] in ("full", "col")

    def _expensive(self, k):
        node = self.spec.nodes[k]
        if node[0] != "ew":
            return False
        if any(f in node[1] for f in EXPENSIVE):
            return True
        # NOTE: x ** 2 etc. become multiplications (see _template.power): cheap to redo
        small = {0.0, 1.0, 2.0, 3.0, 4.0, 0.5, -1.0}
        return "**" in node[1] and not any(
            self.spec.nodes[a][0] == "const" and float(self.spec.nodes[a][1]) in small
            for a in node[2])

    def column_pass(self, targets, depth, idx, tag, npass=None):
        stored = {k for k, n in self.stash.items() if npass is not None and n < npass}
        for k in self.p.cone(targets, self._in_pass, stored):
            if k in stored:
                self.out(f"v{k}{tag} = st{k}[j]", depth)
                self.names[k] = f"v{k}{tag}"
            elif self.spec.nodes[k][0] != "reduce":
                self.emit_node(k, depth, idx, tag)
                if npass is not None and self.stash.get(k) == npass:
                    self.out(f"st{k}[j] = {self.ref(k)}", depth)

    def reduction_pass(self, reds, lvl, idx, d):
        """One pass over the columns for the reductions of one level. On rows longer than
        SUM_BLOCK, floating sums go in blocks: each block sums in its own accumulator
        (vectorised as before), the block sums are added up in float64 with Neumaier's
        compensation, so the error does not grow with the row length (as NumPy's pairwise
        sum). Shorter rows take the plain loop: the blocks' set-up costs ~6 ns a row."""
        blocked = [k for k in reds if self._blocked(k)]
        if blocked:
            self.out(f"if C <= {SUM_BLOCK}:", d)
            self.plain_pass(reds, lvl, idx, d + 1)
            self.out("else:", d)
            self.blocked_pass(reds, blocked, lvl, idx, d + 1)
        else:
            self.plain_pass(reds, lvl, idx, d)
        for k in reds:
            self.names[k] = f"acc{k}"

    def plain_pass(self, reds, lvl, idx, d):
        for k in reds:
            self.out(f"acc{k} = {self.reduce_init(k)}", d)
        self.out("for j in range(C):", d)
        self.reduce_body(reds, lvl, idx, d + 1)

    def blocked_pass(self, reds, blocked, lvl, idx, d):
        for k in reds:
            if k not in blocked:
                self.out(f"acc{k} = {self.reduce_init(k)}", d)
        for k in blocked:
            self.out(f"tot{k} = np.float64(0.0)", d)
            self.out(f"cmp{k} = np.float64(0.0)", d)
        self.out(f"for j0 in range(0, C, {SUM_BLOCK}):", d)
        for k in blocked:
            self.out(f"acc{k} = {self.reduce_init(k)}", d + 1)
        # NOTE: an unsigned j: numba cannot prove j0 + ... >= 0, and the negative-index
        # wrap-around it then emits turns the vectorised loop into gathers (12x slower).
        self.out(f"for j in range(np.uint64(j0), np.uint64(min(C, j0 + {SUM_BLOCK}))):", d + 1)
        self.reduce_body(reds, lvl, idx, d + 2)
        for k in blocked:
            self.out(f"tot{k}, cmp{k} = sum_step(tot{k}, cmp{k}, np.float64(acc{k}))", d + 1)
        for k in blocked:
            total = cast(f"sum_total(tot{k}, cmp{k})", "float64", self.p.dtype[k])
            self.out(f"acc{k} = {total}", d)

    def reduce_body(self, reds, lvl, idx, d):
        self.column_pass([self.spec.nodes[k][2] for k in reds], d, idx, f"p{lvl}", lvl - 1)
        for k in reds:
            self.out(self.reduce_step(k), d)

    def _blocked(self, k):
        return self.spec.nodes[k][1] == "sum" and self.p.dtype[k] in FLOATS

    def reduce_init(self, k):
        how, dt = self.spec.nodes[k][1], self.p.dtype[k]
        if how == "sum":
            return typed_literal(0, dt)
        if dt in FLOATS:
            return typed_literal(float("-inf") if how == "max" else float("inf"), dt)
        if dt == "bool":
            return typed_literal(how == "min", dt)
        info = np.iinfo(dt)
        return typed_literal(info.min if how == "max" else info.max, dt)

    def reduce_step(self, k):
        how, arg, dt = self.spec.nodes[k][1], self.spec.nodes[k][2], self.p.dtype[k]
        acc, v = f"acc{k}", cast(self.ref(arg), self.p.dtype[arg], dt)
        if how == "sum":
            if dt == "bool":
                return f"{acc} = {acc} | {v}"
            return f"{acc} = np.int32({acc} + {v})" if dt == "int32" else f"{acc} += {v}"
        if dt in FLOATS:
            return f"{acc} = f{'maximum' if how == 'max' else 'minimum'}({acc}, {v})"
        if dt == "bool":
            return f"{acc} = {acc} {'|' if how == 'max' else '&'} {v}"
        return f"{acc} = {v} if {v} {'>' if how == 'max' else '<'} {acc} else {acc}"


def _params(spec):
    return ", ".join(["R", "C"] + [f"in{i}" for i in range(len(spec.inputs))] +
                     [f"out{o}" for o in range(len(spec.outputs))])


def generate_source(spec: FusedSpec) -> tuple[str, bool]:
    """The text of the kernel module for `spec`, and whether it uses the flat loop."""
    prog = _Program(spec)
    body = _Source(prog)
    body.flat() if prog.flat else body.rows()
    consts = [f"K{k} = {typed_literal(n[1], n[2])}" for k, n in enumerate(spec.nodes)
              if n[0] == "const" and k in prog.needed]
    text = "\n".join(body.lines)
    head = [
        f"# Generated by dualgrad compiler/codegen.py (codegen version {CODEGEN_VERSION}). "
        "Do not edit: the file name is a hash of its text.",
        f"# layout: {'flat' if prog.flat else 'rows'}; spec: {spec.canonical()}",
        "import math",
        "import numpy as np",
        "from numba import njit, prange",
        f"from {_prelude.__name__} import (erf_f32, exp_f32, fmaximum, fminimum, log_f32, "
        "sum_step, sum_total, tanh_f32)",
        "",
        f"FASTMATH = {sorted(FASTMATH)!r}",
        *consts,
        "",
    ]
    variants = []
    for name, parallel, rng in (("kernel_serial", False, "range"),
                                ("kernel_parallel", True, "prange")):
        variants += [
            "",
            f"@njit(nogil=True, parallel={parallel}, error_model='numpy', "
            "fastmath=set(FASTMATH))",
            f"def {name}({_params(spec)}):",
            text.replace("RANGE(", f"{rng}("),
            "",
        ]
    return "\n".join(head + variants), prog.flat


# -- the disk cache (compiler/kernel_cache.py checks what it reads) ---------------------------
cache_dir = kernel_cache.cache_dir


def _prelude_digest() -> str:
    global _PRELUDE_DIGEST
    if _PRELUDE_DIGEST is None:
        _PRELUDE_DIGEST = hashlib.sha256(Path(_prelude.__file__).read_bytes()).hexdigest()
    return _PRELUDE_DIGEST


_PRELUDE_DIGEST = None


def module_name(spec: FusedSpec, source: str) -> str:
    """dualgrad_fused_<hash of codegen version, canonical spec, source and prelude>."""
    h = hashlib.sha256()
    for part in (str(CODEGEN_VERSION), spec.canonical(), source, _prelude_digest()):
        h.update(part.encode())
        h.update(b"\0")
    return f"{kernel_cache.PREFIX}{h.hexdigest()[:24]}"


# -- the callable ------------------------------------------------------------------------------
def _numba_signature(spec: FusedSpec):
    from numba import from_dtype, types
    ndim = {"full": 2, "row": 1, "col": 1, "scalar": 0}
    prog = _Program(spec)
    ins = [types.Array(from_dtype(np.dtype(d)), ndim[k], "C") for d, k in spec.inputs]
    outs = [types.Array(from_dtype(np.dtype(prog.dtype[o])), ndim[prog.kind[o]], "C")
            for o in spec.outputs]
    return (types.intp, types.intp, *ins, *outs)


def _compile(dispatcher, sig):
    """Compile (or load from numba's cache) one signature: (seconds, cache hit?)."""
    import warnings
    from numba.core.errors import NumbaPerformanceWarning
    hits = sum(dispatcher.stats.cache_hits.values())
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        kernel_cache.compile_cached(dispatcher, sig)
    return time.perf_counter() - t0, sum(dispatcher.stats.cache_hits.values()) > hits


class FusedKernel:
    """The callable `compile_fused` returns: fn(R, C, *arrays, out=None) -> tuple of arrays.

    Inputs are full (R, C), row (R,), col (C,) or scalar () arrays of the spec's dtypes; an
    array of another shape with the right size (e.g. (B, T, D) for R = B*T, C = D, or a
    keepdims (R, 1) row) is reshaped, a non-contiguous one copied, a Python scalar converted.
    Outputs are freshly allocated, or written into `out=` buffers (exact shape and dtype,
    C-contiguous), which are returned.

    Attributes for reports: spec, source, module_name, module_path, layout ("flat"|"rows"),
    cache_hit (serial kernel loaded from disk), compile_seconds (serial compile or load),
    parallel_compiled / parallel_cache_hit / parallel_compile_seconds (set on the first call
    of at least PARALLEL_MIN_ELEMENTS elements), parallel_error (why the parallel variant
    could not be built; the serial one is used instead), timing (ns per element of each
    variant on large calls, which decides between them).
    """

    def __init__(self, spec, source, flat, module, path, seconds, hit):
        self.spec, self.source, self.layout = spec, source, "flat" if flat else "rows"
        self.module_name, self.module_path = module.__name__, str(path)
        self.compile_seconds, self.cache_hit = seconds, hit
        self.parallel_compiled = False
        self.parallel_cache_hit = None
        self.parallel_compile_seconds = None
        self.parallel_error = None
        self._serial, self._parallel_disp = module.kernel_serial, module.kernel_parallel
        self._parallel = None
        self._sig = _numba_signature(spec)
        prog = _Program(spec)
        self._can_split = not flat or any(prog.kind[o] == "full" for o in spec.outputs)
        self._rows_only = not flat   # the rows layout splits rows only: R > 1 to go parallel
        code = {k: i for i, k in enumerate(KINDS)}
        self._ins = tuple((np.dtype(d), code[k]) for d, k in spec.inputs)
        self._outs = tuple((np.dtype(prog.dtype[o]), code[prog.kind[o]]) for o in spec.outputs)
        self._lock = threading.Lock()
        self._per_element = [None, None]   # seconds per element: serial, parallel
        self._samples = [0, 0]
        self._big_calls = 0

    def __repr__(self):
        return (f"<FusedKernel {self.module_name} {self.layout} inputs={len(self._ins)} "
                f"outputs={len(self._outs)} cache_hit={self.cache_hit}>")

    def __call__(self, R, C, *arrays, out=None):
        if type(R) is not int or type(C) is not int:
            R, C = int(R), int(C)
        shapes = ((R, C), (R,), (C,), ())
        if len(arrays) != len(self._ins):
            raise TypeError(f"fused kernel {self.module_name} takes {len(self._ins)} arrays, "
                            f"got {len(arrays)}")
        args = list(arrays)
        for i, (dt, kc) in enumerate(self._ins):
            a = args[i]
            if (type(a) is not np.ndarray or a.dtype is not dt or a.shape != shapes[kc]
                    or not a.flags.c_contiguous):
                args[i] = self._coerce(i, a, shapes[kc])
        if out is None:
            bufs = tuple(np.empty(shapes[kc], dt) for dt, kc in self._outs)
        else:
            bufs = self._check_out(out, shapes)
        n = R * C
        if n < PARALLEL_MIN_ELEMENTS or not self._can_split or (R == 1 and self._rows_only):
            self._serial(R, C, *args, *bufs)
            return bufs
        kernel = self._choose()
        t0 = time.perf_counter()
        kernel(R, C, *args, *bufs)
        self._timed(kernel, (time.perf_counter() - t0) / n)
        return bufs

    def call_layout(self):
        """(serial loop, input kind codes, input dtypes): what compiler/fastcall.py needs to
        call the serial loop directly on arrays already in the loop's layout."""
        return self._serial, [kc for _, kc in self._ins], [dt for dt, _ in self._ins]

    # NOTE: on a loaded 2-core machine an OpenMP prange kernel can run 10x slower than the
    # serial one (idle workers spin against the other tenant; measured 16-20 ms against
    # 1.1-2 ms), so above the threshold both variants are timed per element and the faster
    # one is used, the other re-timed every PROBE_EVERY calls. Each row's reductions run in
    # the same order in both, so the choice does not change results.
    def _choose(self):
        par = self._parallel or self._build_parallel()
        if par is self._serial:
            return par
        t_ser, t_par = self._per_element
        if t_par is None:
            return par
        if t_ser is None:
            return self._serial
        self._big_calls += 1
        faster, slower = (par, self._serial) if t_par <= t_ser else (self._serial, par)
        return slower if self._big_calls % PROBE_EVERY == 0 else faster

    def _timed(self, kernel, seconds_per_element):
        i = 0 if kernel is self._serial else 1
        self._samples[i] += 1
        if self._samples[i] == 1:
            return  # NOTE: the first large call of a variant pays page faults / thread start-up
        old = self._per_element[i]
        self._per_element[i] = seconds_per_element if old is None else \
            0.7 * old + 0.3 * seconds_per_element

    @property
    def timing(self):
        """Smoothed ns per element of the serial and the parallel kernel on large calls."""
        return {k: None if t is None else t * 1e9
                for k, t in zip(("serial_ns_per_element", "parallel_ns_per_element"),
                                self._per_element)}

    def _coerce(self, i, a, shape):
        dt, kc = self._ins[i]
        if type(a) is not np.ndarray:
            a = np.asarray(a, dtype=dt)
        elif a.dtype != dt:
            raise TypeError(f"fused kernel {self.module_name}: input {i} has dtype {a.dtype}, "
                            f"expected {dt}")
        if a.shape != shape:
            if a.size != math.prod(shape):
                raise ValueError(f"fused kernel {self.module_name}: input {i} ({KINDS[kc]}) "
                                 f"has shape {a.shape}, expected {shape}")
            a = a.reshape(shape)
        # NOTE: not np.ascontiguousarray, which turns a 0-d array into a 1-d one
        return a if a.flags.c_contiguous else a.copy(order="C")

    def _check_out(self, out, shapes):
        if len(out) != len(self._outs):
            raise TypeError(f"fused kernel {self.module_name}: out= needs {len(self._outs)} "
                            f"buffers, got {len(out)}")
        for o, (buf, (dt, kc)) in enumerate(zip(out, self._outs)):
            if (type(buf) is not np.ndarray or buf.dtype != dt or buf.shape != shapes[kc]
                    or not buf.flags.c_contiguous or not buf.flags.writeable):
                got = (getattr(buf, "dtype", type(buf).__name__), getattr(buf, "shape", None))
                raise ValueError(f"fused kernel {self.module_name}: out[{o}] must be a "
                                 f"writeable C-contiguous {dt} array of shape {shapes[kc]}, "
                                 f"got {got}")
        return tuple(out)

    def _build_parallel(self):
        with self._lock:
            if self._parallel is None:
                try:
                    secs, hit = _compile(self._parallel_disp, self._sig)
                    self._parallel = self._parallel_disp
                    self.parallel_compiled, self.parallel_cache_hit = True, hit
                    self.parallel_compile_seconds = secs
                except Exception as e:  # NOTE: numba's parfor lowering can fail where serial works
                    self.parallel_error = _one_line(e)
                    self._parallel = self._serial
            return self._parallel


def _one_line(exc) -> str:
    """The informative line of a numba error (they open with 'Failed in ... pipeline')."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(("Failed in", "During:", "File ", "^"))]
    return f"{type(exc).__name__}: {(useful or lines or [''])[0]}"[:300]


# -- entry point -------------------------------------------------------------------------------
_KERNELS: dict[str, FusedKernel] = {}
_COMPILE_LOCK = threading.Lock()


def compile_fused(spec: FusedSpec) -> FusedKernel:
    """Compile `spec` (or load it from the disk cache) once per process; see FusedKernel.

    Raises CodegenError with a one-line reason if the spec uses something the generator does
    not support or numba cannot compile it.
    """
    key = spec.canonical()
    fn = _KERNELS.get(key)
    if fn is not None:
        return fn
    with _COMPILE_LOCK:
        fn = _KERNELS.get(key)
        if fn is None:
            fn = _KERNELS[key] = _build(spec)
    return fn


def _build(spec: FusedSpec) -> FusedKernel:
    source, flat = generate_source(spec)
    name = module_name(spec, source)
    try:
        path = kernel_cache.place(name, source)
    except OSError as e:
        raise CodegenError(f"cannot write kernel {name}: {e.strerror or e}") from e
    sig = _numba_signature(spec)
    try:
        module = kernel_cache.load(name, source, path)
        whys = [kernel_cache.attach_cache(d) for d in (module.kernel_serial,
                                                        module.kernel_parallel)]
        if any(whys):
            kernel_cache.warn_uncached(path, next(w for w in whys if w))
        seconds, hit = _compile(module.kernel_serial, sig)
    except Exception as e:
        raise CodegenError(f"numba cannot compile {name}: {_one_line(e)}") from e
    return FusedKernel(spec, source, flat, module, path, seconds, hit)

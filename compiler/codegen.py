"""Fused-loop source generation: a `FusedSpec` -> the text of one numba kernel module.

    >>> from dualgrad.compiler.fused_spec import FusedSpec
    >>> spec = FusedSpec(inputs=(("float32", "full"),),
    ...                  nodes=(("in", 0), ("ew", "exp({0})", (0,), "float32")), outputs=(1,))
    >>> source, flat = generate_source(spec)
    >>> flat, "def kernel_serial(R, C, in0, out0):" in source
    (True, True)

Two loop shapes are generated (see `_Source`):

* flat: no reduction and only full/scalar inputs -> one loop over R*C elements, so that a
  single long row still runs on every core;
* rows: otherwise -> a loop over rows; per row, one pass over the columns for each level of
  reductions (LayerNorm: mean, then variance), recomputing the elementwise values a pass
  needs from the inputs (the row stays in cache), then one pass writing the full outputs.
  An expensive value that a later pass needs again (softmax's exp(x - max)) is kept in a
  scratch row instead of being recomputed. A floating sum over a row longer than SUM_BLOCK
  adds blocks into a compensated float64 total, so it is as exact as NumPy's pairwise sum.

Each spec becomes a real `.py` module under `<cache>/kernels/` named by `module_name` (a
hash of the spec, the generated source, the prelude and CODEGEN_VERSION); `fused_kernel.py`
places, loads and compiles it, and `kernel_cache.py` checks the directory it lives in.

numba options, each measured against hand-written numba (docs/compiler.md, Generated
kernels): error_model='numpy' (a zero-check on every `/` blocks vectorisation), typed
constants (a Python float literal turns float32 math into float64), FASTMATH below
(reductions only vectorise with `reassoc`), and rational tanh/erf/exp/log approximations
from `prelude.py` (no SVML: libm tanhf in a loop is 5x slower than NumPy).
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from . import kernel_cache, prelude
from ._template import FLOATS, TemplateError, cast, lower_template, typed_literal
from .fused_spec import CodegenError, FusedSpec, SpecInfo, reduce_seed

CODEGEN_VERSION = 6
# NOTE: fastmath 'reassoc' alone, and only in kernels with a reduction (`_fastmath`): reductions
# need only it to vectorise (and their sums are not NumPy's pairwise ones anyway); every other flag
# changes an elementwise result, which the optimiser must not do (tests/ops/test_numerics.py
# and tests/compiler/test_fused_exact.py check bit equality with the unfused graph): 'nnan' /
# 'ninf' break isnan-style templates (x != x), -inf max seeds and NaN propagation; 'arcp'
# turned 1 / sqrt(x) into an approximate rsqrt plus a Newton step (NaN at 0, ulps off) and
# x / 3 into x * (1/3); 'contract' fuses a*b+c into one rounding (1-2 float32 ulps off
# NumPy's two); 'nsz' with 'reassoc' lets LLVM reassociate elementwise arithmetic.
FASTMATH = frozenset({"reassoc"})
# Full values worth keeping in a scratch row (one per block of rows) rather than computing
# again in a later pass: vectorised exp costs ~0.55 ns/element, an L1/L2 load far less.
EXPENSIVE = ("exp(", "log(", "log1p(", "tanh(", "erf(")  # and ** with a general exponent
MAX_STASH = 4
# Columns a floating sum adds in one accumulator before the block's sum goes into the row's
# compensated float64 total (see _Source.reduction_pass): long enough that the per-block
# step costs nothing measurable, short enough that a block's own error stays ~1e-7.
SUM_BLOCK = 1024


# -- source generation -------------------------------------------------------------------------
class _Source:
    """Builds the text of one kernel body (shared by the serial and the parallel variant)."""

    def __init__(self, prog: SpecInfo):
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
            role = self.spec.inputs[node[1]][1]
            arr = self.arrays.get(node[1], f"in{node[1]}")
            self.out(f"{var} = {arr}[{index[role]}]", depth)
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

    def outputs_of(self, roles):
        return [(o, k) for o, k in enumerate(self.spec.outputs) if self.p.role[k] in roles]

    def scalars(self, depth):
        p = self.p
        self.emit_all([k for k in p.needed if p.role[k] == "scalar"], depth, {"scalar": "()"})
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
        # ravel(), not reshape(n): with reshaped views LLVM left a loop over 5 inputs and 12
        # outputs scalar (86 µs against 8.5 µs at 32x64, the LSTM cell's gradient loop)
        for i, (_, role) in enumerate(self.spec.inputs):
            if role == "full":
                self.out(f"in{i}f = in{i}.ravel()", 1)
                self.arrays[i] = f"in{i}f"
        for o, _ in full:
            self.out(f"out{o}f = out{o}.ravel()", 1)
        self.out("for e in RANGE(n):", 1)
        idx = {"full": "e", "scalar": "()"}
        self.emit_all(self.p.cone([k for _, k in full], lambda a: self.p.role[a] == "full"),
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
        row_nodes = [k for k in p.needed if p.role[k] == "row"]
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
                        and self.p.role[k] == "full"
                        and any(k in later for later in cones[n + 1:])):
                    self.stash[k] = n
            stored = set(self.stash)
            cones[n + 1:] = [set(self.p.cone(t, self._in_pass, stored)) for t in targets[n + 1:]]

    def _in_pass(self, a):
        return self.p.role[a] in ("full", "col")

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
        dt = self.p.dtype[k]
        return typed_literal(reduce_seed(self.spec.nodes[k][1], dt), dt)

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


def _fastmath(spec):
    """FASTMATH for a kernel with a reduction (its accumulation must vectorise); none for a
    purely elementwise one, so LLVM does not reassociate (a / b) * c into (a * c) / b: that
    loop then rounds exactly as the op-by-op kernels do."""
    return FASTMATH if any(n[0] == "reduce" for n in spec.nodes) else frozenset()


def generate_source(spec: FusedSpec) -> tuple[str, bool]:
    """The text of the kernel module for `spec`, and whether it uses the flat loop."""
    prog = SpecInfo(spec)
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
        f"from {prelude.__name__} import (NoAliasPipeline, erf_f32, exp_f32, fmaximum, "
        "fminimum, log_f32, sum_step, sum_total, tanh_f32)",
        "",
        f"FASTMATH = {sorted(_fastmath(spec))!r}",
        *consts,
        "",
    ]
    variants = []
    for name, parallel, rng in (("kernel_serial", False, "range"),
                                ("kernel_parallel", True, "prange")):
        variants += [
            "",
            f"@njit(nogil=True, parallel={parallel}, error_model='numpy', "
            "fastmath=set(FASTMATH), pipeline_class=NoAliasPipeline)",
            f"def {name}({_params(spec)}):",
            text.replace("RANGE(", f"{rng}("),
            "",
        ]
    return "\n".join(head + variants), prog.flat


# -- the kernel module's name in the disk cache ----------------------------------------------
def _prelude_digest() -> str:
    global _PRELUDE_DIGEST
    if _PRELUDE_DIGEST is None:
        _PRELUDE_DIGEST = hashlib.sha256(Path(prelude.__file__).read_bytes()).hexdigest()
    return _PRELUDE_DIGEST


_PRELUDE_DIGEST = None


def module_name(spec: FusedSpec, source: str) -> str:
    """dualgrad_fused_<hash of codegen version, canonical spec, source and prelude>."""
    h = hashlib.sha256()
    for part in (str(CODEGEN_VERSION), spec.canonical(), source, _prelude_digest()):
        h.update(part.encode())
        h.update(b"\0")
    return f"{kernel_cache.PREFIX}{h.hexdigest()[:24]}"


"""compile() and the graph optimiser never change a result: random programs over every dtype.

Each seed (0 .. N_PROGRAMS-1, printed on failure) is one random program (random_programs.py):
2-3 inputs of bool, uint8, int8, int16, int32, int64, float16, float32 or float64 with
broadcasting shapes, then 3-7 steps drawn from binary arithmetic and comparisons between
values, arithmetic with Python scalars (0, 1, 2, -1, 0.5, 2.5, 1.0, True: so x*1, x+0 and
x/1 reach the simplifier), true, floor division and remainder, neg/abs, casts to every
dtype, where, and sum/prod/amax/mean/any/all over None, the last or the first axis. Every
step is valid PyTorch (torch and eager both run it when the program is drawn).

Two front ends, compared where each has its own rules:
- PyTorch's: eager against torch (dtype; values on the grid the inputs are drawn from), and
  `compiler.compile` of the program against eager (same dtype and value, no graph break);
- TF1's strict graph front end: the same program with the casts TF1 asks for (every operand
  cast to the dtype eager computes the step in), run unoptimised and optimised
  (`Session(optimize=True)`: folding - 30% of the inputs are constants - simplify, cse,
  fusion into numba loops, buffers): the same dtype and value, each equal to the node's
  declared dtype and to eager's result.

Cap: N_PROGRAMS = 500 (the issue's minimum), about 10 s with a warm kernel cache and under a
minute cold on this machine; the programs are small (at most 3x4 values) so the time is the
tracing, optimising and numba compiles of the fused groups.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from dualgrad import compiler, eager, graph
from tests.compiler import random_programs as rp

pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")   # x / 0 in float steps

N_PROGRAMS = 500
_TOL = {"float16": 1e-2, "float32": 1e-5, "float64": 1e-12}


def _same(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        tol = _TOL[want.dtype.name]
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                                   atol=tol, equal_nan=True, err_msg=what)


def _check(seed):
    prog, arrays, const = rp.generate(seed)
    ni = len(arrays)
    ev = rp.run_eager(prog, arrays)
    want = [v.numpy() for v in ev]
    tv = rp.run_torch(prog, arrays)
    for k, step in enumerate(prog):
        _same(tv[ni + k].numpy(), want[ni + k], f"seed {seed}: torch vs eager at {step}")

    def fn(*xs):
        return tuple(rp.run_program(rp.EAGER, prog, list(xs))[ni:])
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # NOTE: a graph break is a failure here
        # the generator broadcasts (N, 1) against (N,) on purpose: the shape rule's warning
        # about it is not a graph break
        warnings.filterwarnings("ignore", message=".*likely a bug", category=UserWarning)
        got = compiler.compile(fn)(*[eager.tensor(a.copy()) for a in arrays])
    for k, step in enumerate(prog):
        _same(got[k].numpy(), want[ni + k], f"seed {seed}: compile() vs eager at {step}")

    g, vals, feeds = rp.graph_program(prog, arrays, const, [v.dtype for v in want],
                                      [v.shape for v in want])
    fetches = vals[ni:]
    with graph.Session(g, optimize=False) as s:
        plain = s.run(fetches, feeds)
    with graph.Session(g, optimize=True) as s:
        opt = s.run(fetches, feeds)
    for k, step in enumerate(prog):
        where = f"seed {seed}: graph at {step}"
        assert np.asarray(plain[k]).dtype == fetches[k].dtype, \
            f"{where}: the node says {fetches[k].dtype}, its kernel gave {plain[k].dtype}"
        _same(opt[k], plain[k], f"{where}: optimised vs unoptimised")
        _same(plain[k], want[ni + k], f"{where}: graph vs eager")


@pytest.mark.parametrize("block", range(10))
def test_random_programs_agree_in_every_engine(block):
    per = N_PROGRAMS // 10
    print(f"seeds {block * per} .. {(block + 1) * per - 1} (random_programs.generate(seed))")
    for seed in range(block * per, (block + 1) * per):
        _check(seed)


def test_the_programs_cover_every_dtype_and_reduction():
    """The generator really draws what the docstring says (a generator drifting to floats only
    would make the test above pass for nothing)."""
    seen_in, seen_red, seen_out = set(), set(), set()
    for seed in range(0, N_PROGRAMS, 5):
        prog, arrays, _ = rp.generate(seed)
        seen_in |= {a.dtype.name for a in arrays}
        vals = rp.run_eager(prog, arrays)
        for step, v in zip(prog, vals[len(arrays):]):
            if step[0] == "reduce":
                seen_red.add((step[1], vals[step[2]].dtype.kind))
            seen_out.add(v.dtype.name)
    assert seen_in == set(rp.DTYPES)
    assert seen_out >= set(rp.DTYPES) - {"int16"}
    for red in ("sum", "prod", "amax", "any", "all"):
        assert {red} | {k for r, k in seen_red if r == red} >= {red, "b", "i", "f"}, red

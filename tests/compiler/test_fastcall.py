"""Small fused loops run through a function generated for their shapes (compiler/fastcall.py):
the same answers as the general path, non-contiguous inputs included, and any call the guard
does not recognise goes the general way."""
import numpy as np
import pytest

from dualgrad import graph
from dualgrad.compiler.fastcall import MISS
from dualgrad.compiler.passes.fuse import FusedRun


def _lstm_gates():
    """An LSTM cell's gate arithmetic: column slices of one (32, 256) matrix, non-contiguous."""
    g = graph.Graph()
    with g.as_default():
        z = graph.placeholder(graph.float32, (32, 256), name="z")
        c = graph.placeholder(graph.float32, (32, 64), name="c")
        i, f, o, u = (z[:, k * 64:(k + 1) * 64] for k in range(4))
        c2 = graph.sigmoid(f) * c + graph.sigmoid(i) * graph.tanh(u)
        h = graph.sigmoid(o) * graph.tanh(c2)
        rowsum = graph.reduce_sum(h * h, axis=1, keepdims=True)
    rng = np.random.default_rng(0)
    feeds = {z: rng.standard_normal((32, 256)).astype(np.float32),
             c: rng.standard_normal((32, 64)).astype(np.float32)}
    return g, [c2, h, rowsum], feeds


def _fused_runs(sess):
    return [s.kernel for p in sess._plans.values() for s in p.steps
            if isinstance(s.kernel, FusedRun)]


def test_small_fused_loops_match_the_unoptimised_graph_on_every_call():
    g, fetches, feeds = _lstm_gates()
    with graph.Session(g, optimize=False) as s:
        want = s.run(fetches, feeds)
    with graph.Session(g) as s:
        results = [s.run(fetches, feeds) for _ in range(3)]
        runs = _fused_runs(s)
    assert runs and all(r.fast is not None for r in runs)
    for got in results:
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)
    assert results[1][0] is not results[2][0]    # a result handed back is never reused


def test_a_call_the_guard_does_not_recognise_takes_the_general_path():
    g, fetches, feeds = _lstm_gates()
    with graph.Session(g) as s:
        s.run(fetches, feeds)
        s.run(fetches, feeds)
        run = max(_fused_runs(s), key=lambda r: len(r.in_shapes))
    args = [np.ones(sh, np.float32) for sh in run.in_shapes]
    assert run.fast(None, *args) is not MISS
    assert run.fast(None, *[a.astype(np.float64) for a in args]) is MISS
    with pytest.raises(TypeError, match="dtype float64"):
        run(*[a.astype(np.float64) for a in args])
    wide = [np.ones((sh[0], sh[1] * 2), np.float32)[:, ::2] if len(sh) == 2 else
            np.ones(sh, np.float32) for sh in run.in_shapes]
    np.testing.assert_array_equal(run(*wide)[0], run(*args)[0])

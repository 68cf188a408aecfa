"""What the TF oracle rows (tests/graph/tf_oracle_table.py) cannot show for scatter_nd, the
tensor_scatter_nd_* family, the unsorted segment reductions, reverse_sequence, bincount,
histogram_fixed_width, confusion_matrix and empty reductions: run-time errors, shapes known
only at run time, infinities, and the ONNX writer's refusal. Each case runs the same program
in real tf.compat.v1 and in dualgrad (optimiser off and on).

Cap: 14 error cases, 16 empty-reduction cases and a few single programs, each one small
TF graph and one dualgrad graph (about 10 s here)."""
import numpy as np
import pytest

from dualgrad import graph as dg

from . import tf_oracle as O

pytest.importorskip("tensorflow")

I32 = np.int32


def _run(module, build, feeds):
    """Build `build(module, *placeholders)` over placeholders of the fed arrays (unknown
    dims, but an index array's last: dualgrad needs it while building) and run it."""
    g = module.Graph()
    with g.as_default():
        ps = [module.placeholder(a.dtype, [None] * (a.ndim - 1) + [
            a.shape[-1] if a.dtype.kind in "iu" and a.ndim > 1 else None]) for a in feeds]
        out = build(module, *ps)
        if module is dg:
            res = []
            for opt in (False, True):
                with dg.Session(graph=g, optimize=opt) as s:
                    res.append(s.run(out, dict(zip(ps, feeds))))
            return res
        with module.Session(graph=g) as s:
            return s.run(out, dict(zip(ps, feeds)))


F = np.float32
ERRORS = {
    "scatter_nd index too large": (lambda t, i, u: t.scatter_nd(i, u, [5]),
                                   [np.array([[1], [7]], I32), np.ones(2, F)]),
    "scatter_nd negative index": (lambda t, i, u: t.scatter_nd(i, u, [5]),
                                  [np.array([[-1]], I32), np.ones(1, F)]),
    "scatter_nd empty index rows": (lambda t, i, u: t.scatter_nd(i, u, [3]),
                                    [np.zeros((2, 0), I32), np.ones((2, 3), F)]),
    "tensor_scatter_nd_update": (lambda t, x, i, u: t.tensor_scatter_nd_update(x, i, u),
                                 [np.zeros((2, 3), F), np.array([[1, 3]], I32), np.ones(1, F)]),
    "tensor_scatter_nd_max": (lambda t, x, i, u: t.tensor_scatter_nd_max(x, i, u),
                              [np.zeros((4,), F), np.array([[-2]], I32), np.ones(1, F)]),
    "tensor_scatter_nd_add": (lambda t, x, i, u: t.tensor_scatter_nd_add(x, i, u),
                              [np.zeros((4,), F), np.array([[4]], I32), np.ones(1, F)]),
    "unsorted_segment_max": (lambda t, d, s: t.unsorted_segment_max(d, s, 3),
                             [np.ones(2, F), np.array([0, 3], I32)]),
    "unsorted_segment_prod": (lambda t, d, s: t.unsorted_segment_prod(d, s, 2),
                              [np.ones((2, 2), F), np.array([[0, 1], [5, 1]], I32)]),
    "reverse_sequence too long": (lambda t, x, n: t.reverse_sequence(x, n, seq_axis=1),
                                  [np.ones((2, 3), F), np.array([1, 4], I32)]),
    "reverse_sequence negative": (lambda t, x, n: t.reverse_sequence(x, n, seq_axis=1),
                                  [np.ones((2, 3), F), np.array([-1, 2], I32)]),
    "bincount negative": (lambda t, a: t.bincount(a), [np.array([1, -1], I32)]),
    "histogram range": (lambda t, v, r: t.histogram_fixed_width(v, r, nbins=3),
                        [np.ones(3, F), np.array([2.0, 1.0], F)]),
    "histogram NaN": (lambda t, v, r: t.histogram_fixed_width(v, r, nbins=3),
                      [np.array([0.5, np.nan], F), np.array([0.0, 1.0], F)]),
    "confusion_matrix label out of range": (
        lambda t, lab, p: t.confusion_matrix(lab, p, num_classes=3),
        [np.array([0, 3], I32), np.array([1, 1], I32)]),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_bad_values_raise_when_run_naming_the_node_as_tf(case):
    build, feeds = ERRORS[case]
    tf = O.load_tf()
    with pytest.raises(tf.errors.InvalidArgumentError):
        _run(tf.compat.v1, build, feeds)
    with pytest.raises(dg.errors.InvalidArgumentError) as e:
        _run(dg, build, feeds)
    msg = str(e.value)
    assert "in node '" in msg and "defined at" in msg and __file__.split("/")[-1] in msg, msg


EMPTY_DTYPES = ("uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")


@pytest.mark.parametrize("dtype", EMPTY_DTYPES)
@pytest.mark.parametrize("fn", ["reduce_max", "reduce_min"])
def test_reductions_over_an_axis_empty_only_at_run_time_are_tfs(fn, dtype):
    """-inf / +inf, or the integer dtype's lowest / highest, also when the placeholder's
    dims are unknown while building (no static shortcut)."""
    x = np.zeros((2, 0), dtype)
    build = (lambda t, p: [getattr(t, fn)(p, axis=1), getattr(t, fn)(p)])
    want = _run(O.load_tf().compat.v1, build, [x])
    for got in _run(dg, build, [x]):
        for a, b in zip(want, got):
            assert a.dtype == b.dtype and np.array_equal(a, b), (a, b)


def test_reverse_sequence_keeps_infinities_and_nan_in_place():
    """(A one-hot matmul made every element of an example with an inf NaN.)"""
    x = np.arange(12, dtype=F).reshape(3, 4)
    x[0, 3], x[1, 0], x[2, 1] = np.inf, np.nan, -np.inf
    build = (lambda t, p, n: t.reverse_sequence(p, n, seq_axis=1, batch_axis=0))
    feeds = [x, np.array([2, 4, 3], I32)]
    want = _run(O.load_tf().compat.v1, build, feeds)
    for got in _run(dg, build, feeds):
        np.testing.assert_array_equal(got, want)


N = np.nan


@pytest.mark.parametrize("how", ["max", "min"])
@pytest.mark.parametrize("fn", ["unsorted_segment", "tensor_scatter_nd"])
def test_nan_and_ties_as_tfs_cpu_kernels(fn, how):
    """NaN: a segment's NaN row is replaced by the next row (std::max(value, current)); a
    tensor_scatter skips NaN updates and keeps NaN elements. Ties share the gradient."""
    data = np.array([[1.0, N, 2.0], [1.0, 2.0, N], [0.5, 2.0, N], [3.0, -1.0, 4.0]], F)
    ids = np.array([0, 0, 0, -1], I32)
    into = np.array([[1.0, 2.0, N], [N, 0.0, 0.0]], F)
    w = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], F)

    def build(t, d, s, x):
        if fn == "unsorted_segment":
            y = getattr(t, f"unsorted_segment_{how}")(d, s, 2)
            return [y, t.gradients(t.reduce_sum(y * w), d)[0]]
        y = getattr(t, f"tensor_scatter_nd_{how}")(x, t.reshape(t.maximum(s, 0), [-1, 1]), d)
        return [y] + t.gradients(t.reduce_sum(y * w), [d, x])
    feeds = [data, ids, into]
    want = _run(O.load_tf().compat.v1, build, feeds)
    for got in _run(dg, build, feeds):
        for a, b in zip(want, got):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("what", ["scatter_nd", "reverse_sequence"])
def test_onnx_export_refuses_by_name(what, tmp_path):
    """The writer has no ScatterND / ReverseSequence mapping of these graphs (a checked
    index op and a scatter-add): it refuses, naming the node, not writing a wrong model."""
    pytest.importorskip("onnx")
    g = dg.Graph()
    with g.as_default():
        x = dg.placeholder(dg.float32, (3, 2))
        out = dg.scatter_nd([[0], [2], [0]], x, [4, 2]) if what == "scatter_nd" else \
            dg.reverse_sequence(x, [1, 2, 2], seq_axis=1)
        with dg.Session() as s, pytest.raises(dg.onnx.OnnxError, match="has no ONNX counterpart"):
            dg.onnx.export(tmp_path / "m.onnx", [x], [out], session=s)

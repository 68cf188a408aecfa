"""graph.one_hot is tf.one_hot: on/off values, the new axis, dtype inference, and an index
outside [0, depth) giving a row of off_value (TF), where eager's F.one_hot raises (torch)."""
import numpy as np
import pytest

from dualgrad import eager, graph as tf
from dualgrad.eager.nn import functional as F


def _expected(idx, depth, on=1.0, off=0.0, axis=-1, dtype=np.float32):
    idx = np.asarray(idx)
    out = np.full(idx.shape + (depth,), off, dtype)
    for pos in np.ndindex(*idx.shape):
        if 0 <= idx[pos] < depth:
            out[pos + (idx[pos],)] = on
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("optimize", [False, True])
@pytest.mark.parametrize("idx,depth,kw", [
    ([3, 0, -1, 1], 4, {}),
    ([3, 0, -1, 1], 4, dict(on_value=2.5, off_value=-1.0)),
    ([0, 2, -1, 1], 3, dict(on_value=0.0, off_value=3.0, axis=0)),
    ([[0, 2], [1, -1]], 3, dict(axis=1)),
    ([[0, 2], [1, 7]], 3, dict(axis=0, dtype="float64")),
    ([], 5, {}),
])
def test_one_hot_follows_tf(idx, depth, kw, optimize):
    dtype = np.dtype(kw.get("dtype", "float32"))
    want = _expected(idx, depth, kw.get("on_value", 1.0), kw.get("off_value", 0.0),
                     kw.get("axis", -1), dtype)
    with tf.Graph().as_default():
        ph = tf.placeholder(tf.int64, np.shape(idx))
        out = tf.one_hot(ph, depth, **kw)
        with tf.Session(optimize=optimize) as s:
            got = s.run(out, {ph: np.asarray(idx, np.int64).reshape(np.shape(idx))})
    assert got.dtype == dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_one_hot_dtype_from_values_and_errors():
    with tf.Graph().as_default():
        ints = tf.one_hot([1, 0], 2, on_value=7, off_value=-7)
        assert ints.dtype == np.int32
        f64 = tf.one_hot([1], 2, on_value=np.float64(1.0))
        assert f64.dtype == np.float64
        with tf.Session() as s:
            assert s.run(ints).tolist() == [[-7, 7], [7, -7]]
        with pytest.raises(TypeError, match="same dtype"):
            tf.one_hot([1], 3, on_value=1.0, off_value=0)
        with pytest.raises(TypeError, match="does not match"):
            tf.one_hot([1], 3, on_value=np.float64(1.0), dtype=tf.float32)
        with pytest.raises(ValueError, match="axis"):
            tf.one_hot([1, 2], 3, axis=2)
        with pytest.raises(TypeError, match="depth must be a Python int"):
            tf.one_hot([1], tf.constant(3))


def test_eager_one_hot_still_raises_as_torch():
    with pytest.raises(RuntimeError, match="out of range"):
        F.one_hot(eager.tensor([0, -1]), 3)
    with pytest.raises(RuntimeError, match="out of range"):
        F.one_hot(eager.tensor([0, 3]), 3)


def test_sparse_softmax_cross_entropy_still_rejects_bad_labels():
    with tf.Graph().as_default():
        logits = tf.constant(np.zeros((2, 3), np.float32))
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 5], logits=logits)
        ok = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 2], logits=logits)
        with tf.Session() as s:
            np.testing.assert_allclose(s.run(ok), [np.log(3.0)] * 2, rtol=1e-6)
            with pytest.raises(Exception, match="out of range"):
                s.run(loss)

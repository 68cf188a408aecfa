"""TF1's dtype rule in graph mode: ops never convert between tensor dtypes (a build-time
TypeError naming both, the op and the user's line), while Python scalars and NumPy values
take the dtype of the tensor they meet; eager keeps PyTorch's promotion (`tf` is
dualgrad.graph)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

from dualgrad import eager, graph as tf
from dualgrad.comparisons.data import digits


def here(offset=0):
    return f"test_tf1_dtypes.py:{inspect.currentframe().f_back.f_lineno + offset}"


def test_mixing_float32_and_float64_tensors_raises_at_build_time():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    y = tf.placeholder(tf.float64, [None, 3], name="y")
    with pytest.raises(TypeError) as e:
        x + y
    msg = str(e.value)
    assert msg.startswith("add: input dtypes float32 and float64 do not match: inputs "
                          "'x:0' (float32) and 'y:0' (float64)")
    assert f"{here(-4)}, building node 'add'" in msg and "graph.cast" in msg


@pytest.mark.parametrize("build, op, dtypes", [
    (lambda i, f, d: i * f, "mul", "int32 and float32"),
    (lambda i, f, d: tf.matmul(f, tf.constant(np.ones((3, 2)))), "matmul", "float32 and float64"),
    (lambda i, f, d: tf.greater(f, d), "gt", "float32 and float64"),
    (lambda i, f, d: tf.concat([f, d], axis=0), "concat", "float32 and float64"),
    (lambda i, f, d: tf.where(f > 0.0, f, d), "where", "float32 and float64"),
    (lambda i, f, d: tf.maximum(i, f), "maximum", "int32 and float32"),
])
def test_each_kind_of_op_refuses_mixed_tensor_dtypes(build, op, dtypes):
    i = tf.placeholder(tf.int32, [2, 3])
    f = tf.placeholder(tf.float32, [2, 3])
    d = tf.placeholder(tf.float64, [2, 3])
    with pytest.raises(TypeError, match=f"^{op}: input dtypes {dtypes} do not match"):
        build(i, f, d)


def test_python_scalars_take_the_tensors_dtype():
    d = tf.placeholder(tf.float64, [3])
    i = tf.placeholder(tf.int32, [3])
    h = tf.placeholder(tf.float16, [3])
    assert (d * 2.0).dtype == np.float64 and (2 - d).dtype == np.float64
    assert (i + 1).dtype == np.int32 and (i * 3).dtype == np.int32
    assert (h * 0.5).dtype == np.float16 and (d ** 2).dtype == np.float64
    assert (i / 2).dtype == np.float64          # TF1's truediv of int32
    with tf.Session() as sess:
        assert sess.run(i + 1, {i: [1, 2, 3]}).tolist() == [2, 3, 4]
    with pytest.raises(TypeError, match=r"mul: expected int32, got 2\.0 of type 'float' "
                                        r"instead"):
        i * 2.0                                 # as TF1: a float is no int32


def test_numpy_values_take_the_tensors_dtype():
    f = tf.placeholder(tf.float32, [3])
    i = tf.placeholder(tf.int32, [3])
    assert (f + np.array([1.0, 2.0, 3.0])).dtype == np.float32       # float64 array
    assert (f * np.float64(2.0)).dtype == np.float32
    assert (f + np.arange(3)).dtype == np.float32                    # int64 array
    assert (i + np.array([1, 2, 3])).dtype == np.int32
    row = tf.reshape(f, [1, 3])
    assert (row @ np.ones((3, 2))).dtype == np.float32   # an operator converts, as TF1's
    # tf.compat.v1's matmul converts b with a's dtype as its hint (checked against TF:
    # tests/graph/test_tf1_python_data.py)
    assert tf.matmul(row, np.ones((3, 2))).dtype == np.float32
    with tf.Session() as sess:
        got = sess.run(f * np.array([0.5, 0.25, 2.0]), {f: [2.0, 4.0, 1.0]})
    assert got.dtype == np.float32 and got.tolist() == [1.0, 1.0, 2.0]
    # TF1 would truncate a float array to int32 silently: dualgrad refuses
    with pytest.raises(TypeError, match="int32 and float64 do not match"):
        i + np.array([1.5, 2.0, 3.0])
    with pytest.raises(TypeError, match="int32 and int64 do not match"):
        i + np.array([2**40, 0, 0])             # out of int32's range: not wrapped around


def test_eager_keeps_pytorch_promotion():
    a = eager.tensor(np.ones(2, np.float32))
    b = eager.tensor(np.ones(2, np.float64))
    assert (a + b).dtype == np.float64
    i = eager.tensor(np.ones(2, np.int64))
    assert (i * a).dtype == np.float32


def float64_logistic_regression(optimize):
    """A TF1 script that keeps everything in float64 (features, weights, learning rate):
    the gradients and the optimizers' updates must stay in float64 too."""
    data = digits()
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, [None, 64])
        y = tf.placeholder(tf.int32, [None])
        w = tf.get_variable("w", [64, 10], tf.float64, tf.zeros_initializer())
        b = tf.Variable(tf.zeros([10], tf.float64))
        logits = tf.matmul(x, w) + b
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                             logits=logits))
        loss += 1e-4 * tf.nn.l2_loss(w)
        step = tf.train.get_or_create_global_step()
        lr = tf.train.exponential_decay(0.5, step, 10, 0.9)
        grads = tf.train.MomentumOptimizer(lr, 0.9).compute_gradients(loss)
        clipped, _ = tf.clip_by_global_norm([gr for gr, _ in grads], 5.0)
        train_op = tf.train.MomentumOptimizer(lr, 0.9).apply_gradients(
            zip(clipped, [v for _, v in grads]), global_step=step)
        adam = tf.train.AdamOptimizer(lr / 50.0).minimize(loss)
        correct = tf.equal(tf.cast(tf.argmax(logits, 1), tf.int32), y)
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float64))
        losses = []
        with tf.Session(optimize=optimize) as sess:
            sess.run(tf.global_variables_initializer())
            for k in range(40):
                lo = (k * 64) % 1000
                feed = {x: data.x_train[lo:lo + 64], y: data.y_train[lo:lo + 64]}
                _, l_ = sess.run([train_op if k < 30 else adam, loss], feed)
                losses.append(l_)
            acc = sess.run(accuracy, {x: data.x_test, y: data.y_test})
    assert loss.dtype == np.float64 and w.dtype == np.float64
    return np.array(losses), acc


def test_a_float64_program_trains_and_optimiser_on_off_agree():
    off, acc_off = float64_logistic_regression(optimize=False)
    on, acc_on = float64_logistic_regression(optimize=True)
    assert off.dtype == np.float64
    assert off[-5:].mean() < 0.3 * off[:3].mean() and acc_off > 0.85
    # NOTE: not closer: the learning rate is float32 (as TF1's exponential_decay), and the
    # optimiser's fused loop rounds 0.9 ** p one ulp apart from NumPy's at some steps
    np.testing.assert_allclose(on, off, rtol=1e-6)
    assert acc_on == pytest.approx(acc_off, abs=1e-3)

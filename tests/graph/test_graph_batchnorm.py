"""graph.layers.batch_normalization (training True / False / a bool placeholder, the
UPDATE_OPS moving averages), graph.nn.moments / batch_normalization, the sigmoid
cross-entropies and avg_pool2d, against NumPy written from TF's formulas."""
import numpy as np
import pytest

from dualgrad import graph

RNG = np.random.default_rng(0)


def _bn(x, mean, var, gamma=1.0, beta=0.0, eps=1e-3):
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _nchw_stats(x):
    return x.mean(axis=(0, 2, 3)).reshape(1, -1, 1, 1), x.var(axis=(0, 2, 3)).reshape(1, -1, 1, 1)


def test_training_true_uses_batch_stats_and_update_ops_move_the_averages():
    x = graph.placeholder(graph.float64, (None, 3, 4, 4))
    y = graph.layers.batch_normalization(x, axis=1, training=True, momentum=0.9)
    updates = graph.get_collection(graph.GraphKeys.UPDATE_OPS)
    assert len(updates) == 2
    names = [v.name for v in graph.global_variables()]
    assert names == ["batch_normalization/gamma:0", "batch_normalization/beta:0",
                     "batch_normalization/moving_mean:0",
                     "batch_normalization/moving_variance:0"]
    assert [v.name for v in graph.trainable_variables()] == names[:2]
    mm, mv = np.zeros(3), np.ones(3)
    with graph.Session() as sess:
        sess.run(graph.global_variables_initializer())
        for _ in range(3):
            xv = RNG.normal(1.0, 2.0, (5, 3, 4, 4))
            out, _ = sess.run([y, updates], {x: xv})
            m, v = _nchw_stats(xv)
            np.testing.assert_allclose(out, _bn(xv, m, v), rtol=1e-10, atol=1e-10)
            mm = 0.9 * mm + 0.1 * m.ravel()
            mv = 0.9 * mv + 0.1 * v.ravel()     # TF: the biased batch variance
        got_mm, got_mv = sess.run(graph.global_variables()[2:])
    np.testing.assert_allclose(got_mm, mm, rtol=1e-10)
    np.testing.assert_allclose(got_mv, mv, rtol=1e-10)


def test_training_false_uses_moving_stats_and_adds_no_updates():
    x = graph.placeholder(graph.float64, (None, 3))
    y = graph.layers.batch_normalization(x, axis=-1, training=False)
    assert graph.get_collection(graph.GraphKeys.UPDATE_OPS) == []
    xv = RNG.normal(size=(4, 3))
    with graph.Session() as sess:
        sess.run(graph.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y, {x: xv}), _bn(xv, 0.0, 1.0))


def test_training_placeholder_switches_at_run_time():
    x = graph.placeholder(graph.float64, (None, 2))
    training = graph.placeholder(graph.bool, ())
    y = graph.layers.batch_normalization(x, training=training, momentum=0.5)
    updates = graph.get_collection(graph.GraphKeys.UPDATE_OPS)
    mm_var, mv_var = graph.global_variables()[2:]
    xv = RNG.normal(3.0, 2.0, size=(6, 2))
    with graph.Session() as sess:
        sess.run(graph.global_variables_initializer())
        out, _ = sess.run([y, updates], {x: xv, training: True})
        np.testing.assert_allclose(out, _bn(xv, xv.mean(0), xv.var(0)), rtol=1e-10)
        mm, mv = 0.5 * xv.mean(0), 0.5 + 0.5 * xv.var(0)
        np.testing.assert_allclose(sess.run(mm_var), mm)
        np.testing.assert_allclose(sess.run(mv_var), mv)
        out, _ = sess.run([y, updates], {x: xv, training: False})   # eval: no movement
        np.testing.assert_allclose(out, _bn(xv, mm, mv), rtol=1e-10)
        np.testing.assert_allclose(sess.run(mm_var), mm)


def test_train_op_with_update_ops_as_control_dependencies():
    x = graph.placeholder(graph.float32, (None, 4))
    h = graph.layers.batch_normalization(x, axis=1, training=True)
    loss = graph.reduce_mean((graph.nn.dense(h, 1) - 1.0) ** 2)
    with graph.control_dependencies(graph.get_collection(graph.GraphKeys.UPDATE_OPS)):
        train_op = graph.train.AdamOptimizer(0.05).minimize(loss)
    xv = RNG.normal(2.0, 1.0, (16, 4)).astype(np.float32)
    with graph.Session() as sess:
        sess.run(graph.global_variables_initializer())
        first = sess.run(loss, {x: xv})
        for _ in range(30):
            sess.run(train_op, {x: xv})
        assert sess.run(loss, {x: xv}) < first
        moving_mean = sess.run(graph.global_variables()[2])
    np.testing.assert_allclose(moving_mean, xv.mean(0) * (1 - 0.99 ** 30), rtol=1e-4)


def test_nn_moments_and_batch_normalization_tf_order():
    """NHWC, as TF: 1-d statistics, offset and scale broadcast along the last dim."""
    x = graph.placeholder(graph.float64, (None, 2, 2, 3))
    mean, var = graph.nn.moments(x, [0, 1, 2])
    offset, scale = graph.constant(np.array([0.0, 1.0, 2.0])), graph.constant(np.ones(3) * 2)
    y = graph.nn.batch_normalization(x, mean, var, offset, scale, variance_epsilon=1e-5)
    assert mean.shape == (3,)
    xv = RNG.normal(size=(4, 2, 2, 3))
    m, v = _nchw_stats(xv.transpose(0, 3, 1, 2))
    with graph.Session() as sess:
        got = sess.run(y, {x: xv})
    want = _bn(xv.transpose(0, 3, 1, 2), m, v, 2.0, np.arange(3.0).reshape(1, 3, 1, 1), 1e-5)
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 1), rtol=1e-10)


def test_sigmoid_cross_entropies_match_tf_formula():
    logits = graph.placeholder(graph.float64, (None, 3))
    labels = graph.placeholder(graph.float64, (None, 3))
    per = graph.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
    mean = graph.losses.sigmoid_cross_entropy(labels, logits)
    xv, tv = RNG.normal(0, 30, (4, 3)), RNG.uniform(size=(4, 3))
    want = np.maximum(xv, 0) - xv * tv + np.log1p(np.exp(-np.abs(xv)))
    with graph.Session() as sess:
        got_per, got_mean = sess.run([per, mean], {logits: xv, labels: tv})
    np.testing.assert_allclose(got_per, want, rtol=1e-10)
    np.testing.assert_allclose(got_mean, want.mean(), rtol=1e-6)   # TF1 losses: float32
    with pytest.raises(ValueError, match="pass both labels= and logits="):
        graph.nn.sigmoid_cross_entropy_with_logits(logits=logits)
    with pytest.raises(graph.ShapeError, match=r"binary_cross_entropy_with_logits: target "
                                               r"\(\?, 1\) must have the shape of input "
                                               r"\(\?, 3\) \(at .*test_graph_batchnorm"):
        graph.nn.sigmoid_cross_entropy_with_logits(
            labels=graph.placeholder(graph.float64, (None, 1)), logits=logits)


def test_avg_pool2d_and_average_pooling2d():
    x = graph.placeholder(graph.float64, (None, 2, 4, 4))
    y = graph.nn.avg_pool2d(x, 2, 2, data_format="NCHW")
    z = graph.layers.average_pooling2d(x, 2, 1, data_format="channels_first")
    assert z.shape == (None, 2, 3, 3)
    assert graph.layers.average_pooling2d(x, 2, 1).shape == (None, 1, 3, 4)   # NHWC
    xv = RNG.normal(size=(1, 2, 4, 4))
    with graph.Session() as sess:
        got = sess.run(y, {x: xv})
    np.testing.assert_allclose(got, xv.reshape(1, 2, 2, 2, 2, 2).mean(axis=(3, 5)))


def test_collections_are_per_graph():
    g = graph.Graph()
    g.add_to_collection("things", 1)
    assert g.get_collection("things") == [1] and graph.get_collection("things") == []
    graph.add_to_collection("things", 2)
    assert graph.get_collection("things") == [2]

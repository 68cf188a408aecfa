"""TF1's session idioms: `Session(config=ConfigProto(...))`, `run(options=, run_metadata=)`,
`Tensor.eval()` / `Operation.run()` with a default session, and streaming metrics over
local variables (`tf` is dualgrad.graph)."""
from __future__ import annotations

import os

import numpy as np
import pytest

from dualgrad import graph as tf
from dualgrad.comparisons.data import digits
from dualgrad.graph.errors import FailedPreconditionError

D = digits()


def mlp_with_streaming_accuracy(optimize):
    """An MLP on the digits, configured and evaluated the way TF1 scripts do it."""
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(1)
        x = tf.placeholder(tf.float32, [None, 64])
        y = tf.placeholder(tf.int64, [None])
        h = tf.layers.dense(x, 32, activation=tf.nn.relu)
        logits = tf.layers.dense(h, 10)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                             logits=logits))
        train_op = tf.train.AdamOptimizer(0.01).minimize(loss)
        acc, acc_op = tf.metrics.accuracy(labels=y, predictions=tf.argmax(logits, 1))
        batch_acc = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
        config = tf.ConfigProto(allow_soft_placement=True, log_device_placement=False,
                                gpu_options=tf.GPUOptions(allow_growth=True),
                                intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
        config.gpu_options.per_process_gpu_memory_fraction = 0.4
        options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        losses = []
        with tf.Session(config=config, optimize=optimize) as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            for i in range(80):
                lo = (i * 50) % 1000
                run_metadata = tf.RunMetadata()
                _, l_ = sess.run([train_op, loss], {x: D.x_train[lo:lo + 50],
                                                    y: D.y_train[lo:lo + 50]},
                                 options=options, run_metadata=run_metadata)
                losses.append(l_)
            parts = []                      # the test set in batches, streamed into acc
            for lo in range(0, len(D.y_test), 100):
                feed = {x: D.x_test[lo:lo + 100], y: D.y_test[lo:lo + 100]}
                sess.run(acc_op, feed)
                parts.append(sess.run(batch_acc, feed) * len(feed[y]))
            streamed = sess.run(acc)
            whole = sess.run(batch_acc, {x: D.x_test, y: D.y_test})
    return np.array(losses), streamed, whole, sum(parts) / len(D.y_test)


def test_configured_session_trains_and_streams_accuracy():
    import numba
    threads, env = numba.get_num_threads(), dict(os.environ)
    off = mlp_with_streaming_accuracy(optimize=False)
    on = mlp_with_streaming_accuracy(optimize=True)
    losses, streamed, whole, by_hand = off
    assert losses[-10:].mean() < 0.3 * losses[:5].mean()      # it learns
    assert streamed > 0.85
    assert streamed == pytest.approx(whole, abs=1e-6) == pytest.approx(by_hand, abs=1e-6)
    np.testing.assert_allclose(on[0], losses, rtol=1e-4, atol=1e-6)
    assert on[1] == pytest.approx(streamed, abs=1e-6)
    # the config's thread counts are not applied to the user's process
    assert numba.get_num_threads() == threads and dict(os.environ) == env


def test_config_messages_check_field_names_and_types():
    with pytest.raises(ValueError, match='ConfigProto has no "allow_soft_placment" field'):
        tf.ConfigProto(allow_soft_placment=True)
    config = tf.ConfigProto()
    with pytest.raises(AttributeError, match='no field "allow_grwth"'):
        config.gpu_options.allow_grwth = True
    assert tf.ConfigProto().gpu_options.allow_growth is False   # each its own GPUOptions
    config.graph_options.optimizer_options.global_jit_level = tf.OptimizerOptions.ON_1
    with pytest.raises(TypeError, match="ConfigProto"):
        tf.Session(config={"allow_soft_placement": True})
    with tf.Session(config=config) as sess:
        with pytest.raises(TypeError, match="RunOptions"):
            sess.run(tf.constant(1.0), options={"trace_level": 3})
    with pytest.raises(NotImplementedError, match="grpc://host:2222"):
        tf.Session("grpc://host:2222")
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(3.0)
    with tf.Session("", g) as sess:                       # TF1's positional order
        assert sess.graph is g and sess.run(c) == 3.0


def test_eval_and_op_run_with_a_default_session():
    x = tf.placeholder(tf.float32, [None])
    v = tf.Variable(np.zeros(2, np.float32))
    bump = v.assign_add(np.ones(2, np.float32)).op
    doubled = x * 2.0
    sess = tf.Session()
    with sess.as_default():
        tf.global_variables_initializer().run()
        bump.run()
        assert doubled.eval({x: [1.0, 2.0]}).tolist() == [2.0, 4.0]
        assert v.eval().tolist() == [1.0, 1.0]
    with tf.Session() as s2:            # `with Session()` makes it the default, as TF1
        s2.run(v.initializer)
        assert v.eval().tolist() == [0.0, 0.0]
    sess.close()
    with pytest.raises(ValueError, match="no default session"):
        v.eval()
    inter = tf.InteractiveSession()
    tf.global_variables_initializer().run()
    assert doubled.eval(feed_dict={x: [3.0]}).tolist() == [6.0]
    inter.close()


def test_accuracy_streams_total_and_count_like_tf1():
    labels = tf.placeholder(tf.int32, [5])
    predictions = tf.placeholder(tf.int32, [5])
    acc, acc_op = tf.metrics.accuracy(labels=labels, predictions=predictions)
    assert [v.name for v in tf.get_collection(tf.GraphKeys.LOCAL_VARIABLES)] == \
        ["accuracy/total:0", "accuracy/count:0"]
    assert tf.global_variables() == [] and tf.trainable_variables() == []
    sess = tf.InteractiveSession()
    sess.run(tf.local_variables_initializer())
    # fetching both: acc reads total / count as they were when the run started
    before, now = sess.run([acc, acc_op], {labels: [1, 0, 0, 0, 0],
                                           predictions: [1, 0, 0, 0, 1]})
    assert (before, now) == (0.0, pytest.approx(0.8))
    now = sess.run(acc_op, {labels: [1, 1, 1, 1, 0], predictions: [0, 0, 0, 0, 0]})
    assert now == pytest.approx(5 / 10)
    assert sess.run(acc) == pytest.approx(0.5)           # reading does not update
    sess.run(tf.local_variables_initializer())            # the usual reset between epochs
    assert sess.run(acc) == 0.0
    sess.close()


def test_accuracy_weights_squeeze_and_cast_and_mean():
    labels = tf.placeholder(tf.int64, [None, 1])         # (N, 1) labels, (N,) predictions
    logits = tf.placeholder(tf.float32, [None, 3])
    weights = tf.placeholder(tf.float32, [None])
    acc, acc_op = tf.metrics.accuracy(labels, tf.argmax(logits, 1), weights=weights,
                                      name="weighted_acc")
    m, m_op = tf.metrics.mean(tf.reduce_max(logits, 1), metrics_collections=["report"])
    assert tf.get_collection("report") == [m]
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        lg = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 2]], np.float32)
        got = sess.run(acc_op, {labels: [[1], [2], [2]], logits: lg, weights: [1.0, 3.0, 0.5]})
        assert got == pytest.approx(1.5 / 4.5)
        assert sess.run(m_op, {logits: lg}) == pytest.approx(4 / 3)
        assert sess.run(m_op, {logits: lg * 2}) == pytest.approx(4 / 3 * 1.5)
    assert [v.name for v in tf.local_variables(scope="weighted_acc")] == \
        ["weighted_acc/total:0", "weighted_acc/count:0"]


def test_metric_counts_need_the_local_initializer_and_are_not_checkpointed(tmp_path):
    w = tf.Variable(np.ones(2, np.float32), name="w")
    acc, acc_op = tf.metrics.accuracy([1, 0], tf.cast(w > 0.5, tf.int32))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(FailedPreconditionError, match="local_variables_initializer"):
            sess.run(acc_op)
        sess.run(tf.local_variables_initializer())
        assert sess.run(acc_op) == 0.5
        tf.train.Saver().save(sess, str(tmp_path / "m"))
    g = tf.load(str(tmp_path / "m"))                      # local variables stay local
    assert [v.name for v in g.get_collection(tf.GraphKeys.LOCAL_VARIABLES)] == \
        ["accuracy/total:0", "accuracy/count:0"]
    assert [v.name for v in g.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)] == ["w:0"]

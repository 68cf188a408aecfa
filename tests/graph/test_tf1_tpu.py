"""tf.contrib.tpu on the CPU: TPUEstimator(use_tpu=False), TPUEstimatorSpec, RunConfig,
TPUConfig, CrossShardOptimizer, and the errors TF gave without a TPU.

TF 2.21 has no contrib and no estimator, so the behaviour checked is TF 1.15's as its
tpu_estimator.py / tpu_config.py / tpu_context.py define it (params['batch_size'] per mode,
as_estimator_spec's conversion, the checks); the numbers are checked against the same network
trained by hand in real tf.compat.v1 from the estimator's initial weights (its step-0
checkpoint), on the same batches.
"""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import graph as tf

tpu = tf.contrib.tpu
RNG = np.random.default_rng(3)
X = RNG.normal(size=(24, 3)).astype(np.float32)
Y = (X @ np.array([1.0, -2.0, 0.5], np.float32) > 0).astype(np.int64)
SEEN = []


def _input_fn(params):
    SEEN.append(("input_fn", params["batch_size"]))
    ds = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
    return ds.repeat().batch(params["batch_size"])


def _eval_input_fn(params):
    ds = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
    return ds.batch(params["batch_size"])


def _metric_fn(labels, logits):
    return {"accuracy": tf.metrics.accuracy(labels, tf.argmax(logits, 1))}


def _model_fn(features, labels, mode, params):
    SEEN.append(("model_fn", params["batch_size"], params["use_tpu"]))
    hidden = tf.layers.dense(features["x"], 4, activation=tf.nn.relu, name="hidden")
    logits = tf.layers.dense(hidden, 2, name="logits")
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tpu.TPUEstimatorSpec(mode, predictions={"logits": logits})
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        tensors = [labels, logits] if params["as_list"] else {"labels": labels,
                                                               "logits": logits}
        return tpu.TPUEstimatorSpec(mode, loss=loss, eval_metrics=(_metric_fn, tensors))
    opt = tpu.CrossShardOptimizer(tf.train.MomentumOptimizer(0.1, 0.9))
    train_op = opt.minimize(loss, global_step=tf.train.get_global_step())
    return tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def _estimator(tmp_path, as_list=True, **kw):
    config = tpu.RunConfig(model_dir=str(tmp_path), save_checkpoints_steps=100,
                           tpu_config=tpu.TPUConfig(iterations_per_loop=10, num_shards=8,
                                                    per_host_input_for_training=tpu.
                                                    InputPipelineConfig.PER_HOST_V2))
    kw = {"train_batch_size": 8, "eval_batch_size": 6, "predict_batch_size": 5,
          "use_tpu": False, **kw}
    return tpu.TPUEstimator(_model_fn, config=config, params={"as_list": as_list}, **kw)


@pytest.mark.parametrize("as_list", [True, False])
def test_cpu_path_matches_tf_trained_by_hand(tmp_path, as_list):
    tf1 = pytest.importorskip("tensorflow").compat.v1
    SEEN.clear()
    est = _estimator(tmp_path, as_list)
    est.train(_input_fn, steps=7)
    # the per-mode batch size reaches both functions; the model_fn learns it is on the CPU
    assert SEEN == [("input_fn", 8), ("model_fn", 8, False)]
    start = str(tmp_path / "model.ckpt-0")
    names = ["hidden/kernel", "hidden/bias", "logits/kernel", "logits/bias"]
    g = tf1.Graph()
    with g.as_default():
        k0, b0, k1, b1 = [tf1.Variable(tf.train.load_variable(start, n)) for n in names]
        xs, ys = tf1.placeholder(tf1.float32, [None, 3]), tf1.placeholder(tf1.int64, [None])
        logits = tf1.matmul(tf1.nn.relu(tf1.matmul(xs, k0) + b0), k1) + b1
        loss = tf1.losses.sparse_softmax_cross_entropy(ys, logits)
        step = tf1.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
        with tf1.Session(graph=g) as sess:
            sess.run(tf1.global_variables_initializer())
            for i in range(7):
                rows = np.arange(i * 8, i * 8 + 8) % 24
                sess.run(step, {xs: X[rows], ys: Y[rows]})
            want = sess.run([k0, b0, k1, b1])
            final = sess.run(logits, {xs: X})
    for n, w in zip(names, want):
        np.testing.assert_allclose(est.get_variable_value(n), w, rtol=1e-4, atol=1e-6,
                                   err_msg=n)
    SEEN.clear()
    metrics = est.evaluate(_eval_input_fn)
    assert SEEN == [("model_fn", 6, False)] and metrics["global_step"] == 7
    np.testing.assert_allclose(metrics["accuracy"], np.mean(final.argmax(1) == Y), rtol=1e-6)
    per = final - final.max(1, keepdims=True)
    per = np.log(np.exp(per).sum(1)) - per[np.arange(24), Y]
    np.testing.assert_allclose(metrics["loss"], per.reshape(4, 6).mean(1).mean(), rtol=1e-5)
    rows = list(est.predict(_eval_input_fn))
    assert len(rows) == 24
    np.testing.assert_allclose([r["logits"] for r in rows], final, rtol=1e-4, atol=1e-6)


def test_scaffold_fn_host_call_and_a_plain_estimator_spec(tmp_path):
    calls = []

    def host_fn(gs, loss):
        calls.append(True)
        return [tf.identity(loss)]

    def model_fn(features, labels, mode, params):
        w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(features["x"][:, 0] * w - 1.0))
        step = tf.train.get_global_step()
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        if params["plain"]:
            return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
        seen = tf.reshape(tf.cast(step, tf.float32), [1])
        return tpu.TPUEstimatorSpec(
            mode, loss=loss, train_op=train_op, host_call=(host_fn, [seen, tf.reshape(loss, [1])]),
            scaffold_fn=lambda: tf.train.Scaffold(init_fn=lambda _, s: s.run(w.assign(3.0))))

    counter = _Counter()
    est = tpu.TPUEstimator(model_fn, config=tpu.RunConfig(model_dir=str(tmp_path / "a")),
                           params={"plain": False}, use_tpu=False, train_batch_size=4)
    est.train(_input_fn, steps=3, hooks=[counter])
    assert est.get_variable_value("w") != 0.0 and len(calls) == 1 and counter.runs == 3
    start = tf.train.load_variable(str(tmp_path / "a" / "model.ckpt-0"), "w")
    assert start == 3.0   # the scaffold's init_fn ran
    plain = tpu.TPUEstimator(model_fn, config=tpu.RunConfig(model_dir=str(tmp_path / "b")),
                             params={"plain": True}, use_tpu=False, train_batch_size=4)
    assert plain.train(_input_fn, steps=2).get_variable_value("global_step") == 2


class _Counter(tf.train.SessionRunHook):
    runs = 0

    def after_run(self, run_context, run_values):
        self.runs += 1


def test_use_tpu_true_raises_tf_error_naming_use_tpu_false(tmp_path):
    est = _estimator(tmp_path, use_tpu=True)
    for call in (lambda: est.train(_input_fn, steps=1),
                 lambda: est.evaluate(_eval_input_fn),
                 lambda: next(est.predict(_eval_input_fn))):
        with pytest.raises(RuntimeError, match="Cannot find any TPU cores.*use_tpu=False"):
            call()
    with pytest.raises(ValueError, match="`train_batch_size` cannot be `None`"):
        _estimator(tmp_path, use_tpu=True, train_batch_size=None)
    # eval_on_tpu=False evaluates on the CPU even with use_tpu=True, as in TF
    on_cpu = _estimator(tmp_path, use_tpu=True, eval_on_tpu=False)
    assert on_cpu.evaluate(_eval_input_fn)["global_step"] == 0


def test_tpu_cluster_resolver_never_reaches_the_network():
    with pytest.raises(ValueError, match="Please provide a TPU Name to connect to.*use_tpu"):
        tf.contrib.cluster_resolver.TPUClusterResolver()
    with pytest.raises(ValueError, match="'my-tpu'.*metadata server.*use_tpu=False"):
        tf.contrib.cluster_resolver.TPUClusterResolver("my-tpu", zone="us-central1-f",
                                                       project="p")


def test_configs_and_misuse(tmp_path):
    c = tpu.TPUConfig(per_host_input_for_training=False)
    assert c.per_host_input_for_training == tpu.InputPipelineConfig.PER_SHARD_V1
    assert tpu.TPUConfig(iterations_per_loop="30s").iterations_per_loop == "30s"
    for bad, err in (({"iterations_per_loop": 0}, ValueError),
                     ({"num_shards": 0}, ValueError), ({"num_shards": 1.5}, TypeError),
                     ({"num_cores_per_replica": 3}, ValueError)):
        with pytest.raises(err):
            tpu.TPUConfig(**bad)
    run = tpu.RunConfig(master="grpc://x:8470", tpu_config=c, save_checkpoints_steps=5)
    again = run.replace(keep_checkpoint_max=2)
    assert isinstance(again, tpu.RunConfig) and again.tpu_config is c
    assert (again.master, again.evaluation_master, again.save_checkpoints_steps) == \
        ("grpc://x:8470", "grpc://x:8470", 5)
    assert run.replace(tpu_config=None).tpu_config is None
    with pytest.raises(ValueError, match="must be provided with type `tpu_config.RunConfig`"):
        tpu.TPUEstimator(_model_fn, config=tf.estimator.RunConfig(), use_tpu=False)
    with pytest.raises(ValueError, match="reserved keys"):
        tpu.TPUEstimator(_model_fn, config=tpu.RunConfig(), params={"batch_size": 2},
                         use_tpu=False)
    est = _estimator(tmp_path)
    with pytest.raises(ValueError, match="input_fn .* does not include params argument"):
        est.train(lambda: _input_fn({"batch_size": 8}), steps=1)
    with pytest.raises(RuntimeError, match="length of tensors 1 does not match"):
        tpu.TPUEstimatorSpec("eval", eval_metrics=(_metric_fn, [1]))
    with pytest.raises(TypeError, match=r"host_call\[0\] should be callable"):
        tpu.TPUEstimatorSpec("train", host_call=(1, []))
    with pytest.raises(ValueError, match="Unsupported reduction"):
        tpu.CrossShardOptimizer(tf.train.GradientDescentOptimizer(0.1), reduction="none")

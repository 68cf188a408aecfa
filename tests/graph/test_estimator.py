"""tf.estimator on the graph engine: Estimator, EstimatorSpec, RunConfig, numpy_input_fn, the
canned DNNClassifier / DNNRegressor, feature columns, hooks.

TF 2.21 has no tf.estimator, so the behaviour checked here is TF 1.15's as documented
(train resumes from model_dir's latest checkpoint, steps / max_steps, the input's end by
OutOfRangeError, evaluate's `loss` and `global_step`, numpy_input_fn's batches across epochs
and its required `shuffle`); the numbers are checked against the same graph run by hand
through a Session and, for DNNClassifier, against the same network trained by hand in real
tf.compat.v1 from the same initial weights.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from dualgrad import graph as tf

RNG = np.random.default_rng(7)
X = RNG.normal(size=(40, 2)).astype(np.float32)
Y = (X[:, 0] - 0.5 * X[:, 1] > 0.1).astype(np.int64)


def _linear_model_fn(features, labels, mode, params):
    """Logistic regression on features["x"] (batch, 2), with accuracy as a metric."""
    w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    logits = tf.reshape(tf.matmul(features["x"], w) + b, [-1])
    classes = tf.cast(logits > 0.0, tf.int64)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"logits": logits,
                                                             "classes": classes})
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.cast(labels, tf.float32), logits=logits))
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
            "accuracy": tf.metrics.accuracy(labels, classes)})
    opt = tf.train.GradientDescentOptimizer(params["lr"])
    train_op = opt.minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _input(batch_size=8, num_epochs=None, shuffle=False, x=X, y=Y):
    return tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=batch_size,
                                              num_epochs=num_epochs, shuffle=shuffle)


def _estimator(tmp_path, **kw):
    return tf.estimator.Estimator(_linear_model_fn, model_dir=str(tmp_path),
                                  params={"lr": 0.5}, **kw)


def _by_hand(checkpoint, x):
    """The model_fn's PREDICT graph built again, the checkpoint restored with a Saver."""
    with tf.Graph().as_default():
        feed = tf.placeholder(tf.float32, [None, 2])
        spec = _linear_model_fn({"x": feed}, None, tf.estimator.ModeKeys.PREDICT, {})
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, checkpoint)
            return sess.run(spec.predictions["logits"], {feed: x})


def _batches(n, batch_size, count):
    """The rows of `count` batches of an in-order numpy_input_fn stream over n examples."""
    order = np.arange(n * (count * batch_size // n + 1)) % n
    return [order[i * batch_size:(i + 1) * batch_size] for i in range(count)]


@pytest.mark.parametrize("module", ["hooks", "feature_column", "estimator.inputs",
                                    "estimator.tpu", "estimator.estimator", "monitored"])
def test_docstring_examples_run(module, tmp_path, monkeypatch):
    import doctest
    import importlib
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))   # model_dir=None's directory
    with tf.Graph().as_default():
        result = doctest.testmod(importlib.import_module(f"dualgrad.graph.{module}"))
    assert result.failed == 0 and result.attempted > 0


# -- a custom model_fn --------------------------------------------------------------------------
def test_train_evaluate_predict_agree_with_the_graph_run_by_hand(tmp_path):
    est = _estimator(tmp_path)
    before = est.evaluate(_input(num_epochs=1))   # no checkpoint: initial values, as TF 1.15
    assert before["global_step"] == 0 and np.isclose(before["loss"], np.log(2), atol=1e-6)
    assert est.train(_input(), steps=30) is est
    after = est.evaluate(_input(num_epochs=1))
    assert after["global_step"] == 30 and after["loss"] < 0.6 * before["loss"]
    logits = _by_hand(est.latest_checkpoint(), X)
    # loss: the mean over the 5 batches of each batch's mean loss; accuracy over every row
    per = np.maximum(logits, 0) - logits * Y + np.log1p(np.exp(-np.abs(logits)))
    np.testing.assert_allclose(after["loss"], per.reshape(5, 8).mean(1).mean(), rtol=1e-5)
    np.testing.assert_allclose(after["accuracy"], np.mean((logits > 0) == Y), rtol=1e-6)
    rows = list(est.predict(tf.estimator.inputs.numpy_input_fn(
        {"x": X}, batch_size=16, shuffle=False)))
    assert len(rows) == 40 and set(rows[0]) == {"logits", "classes"}
    np.testing.assert_allclose([r["logits"] for r in rows], logits, rtol=1e-5, atol=1e-6)
    w = est.get_variable_value("w")
    assert w.shape == (2, 1) and "global_step" in est.get_variable_names()
    batches = list(est.predict(_input(batch_size=16, num_epochs=1), predict_keys="classes",
                               yield_single_examples=False))
    assert [len(b["classes"]) for b in batches] == [16, 16, 8] and set(batches[0]) == {"classes"}


def test_a_second_train_resumes_from_the_checkpoint(tmp_path):
    twice, once = _estimator(tmp_path / "a"), _estimator(tmp_path / "b")
    twice.train(_input(), steps=6)
    twice.train(_input(), steps=6)
    once.train(_input(), steps=12)
    assert os.path.basename(twice.latest_checkpoint()) == "model.ckpt-12"
    assert twice.get_variable_value("global_step") == 12
    # NOTE: each train starts its input again: steps 7-12 see batches 1-6 once more
    w = np.zeros((2, 1), np.float32)
    b = np.zeros(1, np.float32)
    for rows in _batches(40, 8, 6) * 2:
        x, y = X[rows], Y[rows].astype(np.float32)
        p = 1 / (1 + np.exp(-(x @ w + b)[:, 0]))
        g = (p - y) / len(rows)
        w, b = w - 0.5 * (x.T @ g)[:, None], b - 0.5 * g.sum(keepdims=True)
    np.testing.assert_allclose(twice.get_variable_value("w"), w, rtol=1e-5, atol=1e-6)
    assert not np.allclose(once.get_variable_value("w"), w)


def test_max_steps_stops_and_skips_when_reached(tmp_path):
    est = _estimator(tmp_path)
    est.train(_input(), max_steps=7)
    assert est.get_variable_value("global_step") == 7
    w = est.get_variable_value("w")
    est.train(_input(), max_steps=5)   # already past: nothing runs
    np.testing.assert_array_equal(est.get_variable_value("w"), w)
    est.train(_input(), max_steps=9)
    assert est.get_variable_value("global_step") == 9


def test_training_ends_with_the_input(tmp_path):
    est = _estimator(tmp_path)
    est.train(_input(batch_size=16, num_epochs=2))   # 80 rows: 16, 16, 16, 16, 16
    assert est.get_variable_value("global_step") == 5
    est.train(_input(batch_size=16, num_epochs=1), steps=100)   # 40 rows: 16, 16, 8
    assert est.get_variable_value("global_step") == 8


def test_checkpoints_every_n_steps_in_model_dir_only(tmp_path):
    config = tf.estimator.RunConfig(save_checkpoints_steps=4, keep_checkpoint_max=2)
    est = _estimator(tmp_path, config=config)
    est.train(_input(), steps=10)
    names = sorted(os.listdir(tmp_path))
    assert names == ["checkpoint", "model.ckpt-10.json", "model.ckpt-10.safetensors",
                     "model.ckpt-8.json", "model.ckpt-8.safetensors"]
    with pytest.raises(tf.errors.GraphFileError, match="graph.load cannot rebuild it"):
        tf.load(str(tmp_path / "model.ckpt-10"))   # its graph holds a tf.data iterator


def test_model_dir_none_is_a_temporary_directory(tmp_path):
    est = tf.estimator.Estimator(_linear_model_fn, params={"lr": 0.1})
    try:
        est.train(_input(), steps=2)
        assert est.latest_checkpoint().startswith(est.model_dir)
        assert est.config.model_dir == est.model_dir and est.params == {"lr": 0.1}
    finally:
        import shutil
        shutil.rmtree(est.model_dir)


def test_dataset_input_fn_params_and_config_reach_the_functions(tmp_path):
    seen = {}

    def input_fn(params, mode):
        seen["input"] = (params["lr"], mode)
        return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat().batch(10)

    def model_fn(features, labels, mode, params, config):
        seen["model"] = config.model_dir
        return _linear_model_fn(features, labels, mode, params)
    est = tf.estimator.Estimator(model_fn, str(tmp_path), params={"lr": 0.5})
    est.train(input_fn, steps=3)
    assert seen == {"input": (0.5, "train"), "model": str(tmp_path)}
    features_only = tf.data.Dataset.from_tensor_slices({"x": X}).batch(16)   # labels=None
    assert len(list(est.predict(lambda: features_only))) == 40


def test_hooks_see_each_step_and_can_stop(tmp_path):
    class Counter(tf.train.SessionRunHook):
        def begin(self):
            self.calls, self.values = ["begin"], []
            self.step = tf.train.get_global_step()

        def after_create_session(self, session, coord):
            self.calls.append("created")

        def before_run(self, run_context):
            return tf.train.SessionRunArgs(self.step)

        def after_run(self, run_context, run_values):
            self.values.append(int(run_values.results))
            if len(self.values) == 3:
                run_context.request_stop()

        def end(self, session):
            self.calls.append("end")
    hook = Counter()
    est = _estimator(tmp_path)
    est.train(_input(), hooks=[hook], steps=10)
    assert hook.calls == ["begin", "created", "end"] and hook.values == [0, 1, 2]
    assert est.get_variable_value("global_step") == 3
    est.train(_input(), hooks=[tf.train.StopAtStepHook(last_step=5)])
    assert est.get_variable_value("global_step") == 5


def test_warm_start_from_another_model_dir(tmp_path):
    first = _estimator(tmp_path / "a")
    first.train(_input(), steps=5)
    second = _estimator(tmp_path / "b", warm_start_from=str(tmp_path / "a"))
    second.train(_input(batch_size=40), steps=1)   # one step from the first's weights
    x, y = X, Y.astype(np.float32)
    w, b = first.get_variable_value("w"), first.get_variable_value("b")
    g = (1 / (1 + np.exp(-(x @ w + b)[:, 0])) - y) / 40
    np.testing.assert_allclose(second.get_variable_value("w"), w - 0.5 * (x.T @ g)[:, None],
                               rtol=1e-5, atol=1e-6)
    assert second.get_variable_value("global_step") == 1
    np.testing.assert_array_equal(   # the first checkpoint holds the warm-started values
        tf.train.load_variable(str(tmp_path / "b" / "model.ckpt-0"), "w"), w)


# -- errors, as TF raises them ------------------------------------------------------------------
def test_model_fn_without_loss_in_train_and_other_misuse(tmp_path):
    def no_loss(features, labels, mode):
        return tf.estimator.EstimatorSpec(mode, predictions=features["x"])
    with pytest.raises(ValueError, match=r"Missing loss.*test_estimator.py:\d+"):
        tf.estimator.Estimator(no_loss, str(tmp_path)).train(_input(), steps=1)
    with pytest.raises(ValueError, match="must include features"):
        tf.estimator.Estimator(lambda x, labels: None)
    with pytest.raises(ValueError, match="does not include params"):
        tf.estimator.Estimator(no_loss, params={"a": 1})
    with pytest.raises(ValueError, match="does not take labels"):
        tf.estimator.Estimator(lambda features, mode: None, str(tmp_path)).train(_input(), steps=1)
    est = _estimator(tmp_path)
    with pytest.raises(ValueError, match="Can not provide both steps and max_steps"):
        est.train(_input(), steps=1, max_steps=2)
    with pytest.raises(ValueError, match="Must specify steps > 0"):
        est.train(_input(), steps=0)
    with pytest.raises(ValueError, match="Missing train_op"):
        tf.estimator.EstimatorSpec("train", loss=tf.constant(1.0))
    with pytest.raises(ValueError, match="Missing predictions"):
        tf.estimator.EstimatorSpec("infer")
    with pytest.raises(ValueError, match="Loss must be scalar"):
        tf.estimator.EstimatorSpec("eval", loss=tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="cannot be both set"):
        tf.estimator.RunConfig(save_checkpoints_steps=1, save_checkpoints_secs=1)
    with pytest.raises(ValueError, match="Could not find trained model"):
        _estimator(tmp_path / "empty").get_variable_value("w")


# -- numpy_input_fn -----------------------------------------------------------------------------
def _drain(input_fn):
    with tf.Graph().as_default():
        out = input_fn()
        got = []
        with tf.Session() as sess:
            try:
                while True:
                    got.append(sess.run(out))
            except tf.errors.OutOfRangeError:
                return got


def test_numpy_input_fn_batches_epochs_and_shuffle():
    x = {"a": np.arange(10.0), "b": np.arange(20).reshape(10, 2)}
    got = _drain(tf.estimator.inputs.numpy_input_fn(x, np.arange(10) * 10, batch_size=4,
                                                    num_epochs=2, shuffle=False))
    assert [len(y) for _, y in got] == [4, 4, 4, 4, 4]
    assert got[2][1].tolist() == [80, 90, 0, 10]   # one stream: epochs follow each other
    assert got[0][0]["a"].dtype == np.float64 and got[0][0]["b"].shape == (4, 2)
    got = _drain(tf.estimator.inputs.numpy_input_fn(x, np.arange(10), batch_size=3,
                                                    num_epochs=3, shuffle=True))
    labels = np.concatenate([y for _, y in got])
    assert [len(y) for _, y in got] == [3] * 10
    epochs = labels.reshape(3, 10)
    assert all(sorted(e) == list(range(10)) for e in epochs)   # each example once an epoch
    assert any(e.tolist() != list(range(10)) for e in epochs)
    feats = np.concatenate([f["a"] for f, _ in got])
    np.testing.assert_array_equal(feats, labels.astype(np.float64))   # rows stay paired
    alone = _drain(tf.estimator.inputs.numpy_input_fn(np.arange(5), batch_size=2,
                                                      shuffle=False))
    assert [a.tolist() for a in alone] == [[0, 1], [2, 3], [4]]   # x an array: one tensor


def test_numpy_input_fn_errors():
    fn = tf.estimator.inputs.numpy_input_fn
    with pytest.raises(ValueError, match=r"shuffle must be provided and explicitly set.*"
                                         r"\(at .*test_estimator.py:\d+\)"):
        fn({"a": np.zeros(3)}, np.zeros(3))
    with pytest.raises(ValueError, match="Length of tensors in x and y is mismatched"):
        fn({"a": np.zeros(3)}, np.zeros(4), shuffle=False)
    with pytest.raises(ValueError, match="x cannot be an empty dict"):
        fn({}, shuffle=False)
    with pytest.raises(ValueError, match="duplicate keys"):
        fn({"a": np.zeros(3)}, {"a": np.zeros(3)}, shuffle=False)
    with pytest.raises(TypeError, match="x must be a dict or array"):
        fn([1, 2], shuffle=False)


# -- feature columns and the canned estimators --------------------------------------------------
def test_input_layer_orders_columns_by_name_and_casts():
    cols = [tf.feature_column.numeric_column("z", shape=(2, 2)),
            tf.feature_column.numeric_column("a", dtype=tf.int64)]
    features = {"a": np.array([1, 2], np.int64), "z": np.arange(8.0).reshape(2, 2, 2)}
    with tf.Graph().as_default():
        net = tf.feature_column.input_layer(features, cols)
        with tf.Session() as sess:
            got = sess.run(net)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [[1, 0, 1, 2, 3], [2, 4, 5, 6, 7]])
    with pytest.raises(ValueError, match="Feature b is not in features"):
        tf.feature_column.input_layer({"a": np.zeros(2)}, [tf.feature_column.numeric_column("b")])
    with pytest.raises(ValueError, match="shape dimensions must be greater than 0"):
        tf.feature_column.numeric_column("a", shape=(0,))


def _separable(n=64):
    x = RNG.normal(size=(n, 2)).astype(np.float32)
    return x, (x[:, 0] + x[:, 1] > 0).astype(np.int64)


def test_dnn_classifier_learns_a_separable_set(tmp_path):
    x, y = _separable(200)
    cols = [tf.feature_column.numeric_column("b"), tf.feature_column.numeric_column("a")]
    est = tf.estimator.DNNClassifier([8, 8], cols, model_dir=str(tmp_path),
                                     config=tf.estimator.RunConfig(tf_random_seed=3))
    data = {"a": x[:, 0], "b": x[:, 1]}
    est.train(tf.estimator.inputs.numpy_input_fn(data, y, batch_size=32, num_epochs=None,
                                                 shuffle=True), steps=150)
    ev = est.evaluate(tf.estimator.inputs.numpy_input_fn(data, y, batch_size=50,
                                                         shuffle=False))
    assert ev["accuracy"] > 0.95 and ev["global_step"] == 150
    assert {"average_loss", "loss", "accuracy_baseline", "label/mean", "prediction/mean",
            "precision", "recall"} <= set(ev)
    np.testing.assert_allclose(ev["label/mean"], y.mean(), rtol=1e-6)
    preds = list(est.predict(tf.estimator.inputs.numpy_input_fn(data, batch_size=50,
                                                               shuffle=False)))
    ids = np.array([p["class_ids"][0] for p in preds])
    np.testing.assert_allclose(np.mean(ids == y), ev["accuracy"], rtol=1e-6)
    assert preds[0]["classes"][0] == str(ids[0]).encode()
    np.testing.assert_allclose(preds[0]["probabilities"].sum(), 1.0, rtol=1e-6)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_dnn_classifier_matches_tf_trained_by_hand(tmp_path, n_classes):
    """The same network in real tf.compat.v1 (input layer in column-name order, dense relu,
    logits, SUM loss, Adagrad 0.05), from the estimator's initial weights (its step-0
    checkpoint), on the same batches: the weights after 6 steps agree."""
    tf1 = pytest.importorskip("tensorflow").compat.v1
    x, _ = _separable(24)
    y = (np.argsort(np.argsort(x[:, 0])) * n_classes // 24).astype(np.int64)
    cols = [tf.feature_column.numeric_column("b"), tf.feature_column.numeric_column("a")]
    est = tf.estimator.DNNClassifier([5], cols, model_dir=str(tmp_path), n_classes=n_classes)
    est.train(tf.estimator.inputs.numpy_input_fn({"a": x[:, 0], "b": x[:, 1]}, y,
                                                 batch_size=10, num_epochs=None,
                                                 shuffle=False), steps=6)
    start = str(tmp_path / "model.ckpt-0")
    names = ["dnn/hiddenlayer_0/kernel", "dnn/hiddenlayer_0/bias", "dnn/logits/kernel",
             "dnn/logits/bias"]
    g = tf1.Graph()
    with g.as_default():
        k0, b0, k1, b1 = [tf1.Variable(tf.train.load_variable(start, n)) for n in names]
        xs = tf1.placeholder(tf1.float32, [None, 2])
        ys = tf1.placeholder(tf1.int64, [None])
        logits = tf1.matmul(tf1.nn.relu(tf1.matmul(xs, k0) + b0), k1) + b1
        if n_classes == 2:
            per = tf1.nn.sigmoid_cross_entropy_with_logits(
                labels=tf1.cast(ys, tf1.float32)[:, None], logits=logits)
        else:
            per = tf1.nn.sparse_softmax_cross_entropy_with_logits(labels=ys, logits=logits)
        step = tf1.train.AdagradOptimizer(0.05).minimize(tf1.reduce_sum(per))
        with tf1.Session(graph=g) as sess:
            sess.run(tf1.global_variables_initializer())
            for rows in _batches(24, 10, 6):
                sess.run(step, {xs: x[rows], ys: y[rows]})   # column order: a, b
            want = sess.run([k0, b0, k1, b1])
    for n, w in zip(names, want):
        np.testing.assert_allclose(est.get_variable_value(n), w, rtol=1e-4, atol=1e-6,
                                   err_msg=n)


def test_dnn_regressor_fits_a_line(tmp_path):
    x = np.linspace(-1, 1, 32).astype(np.float32)
    y = 2 * x + 1
    cols = [tf.feature_column.numeric_column("x")]
    est = tf.estimator.DNNRegressor([8], cols, model_dir=str(tmp_path), optimizer="Adam",
                                    config=tf.estimator.RunConfig(tf_random_seed=1))
    est.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=32, num_epochs=None,
                                                 shuffle=False), steps=150)
    ev = est.evaluate(tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=32,
                                                         shuffle=False))
    assert ev["average_loss"] < 0.05
    np.testing.assert_allclose(ev["loss"], ev["average_loss"] * 32, rtol=1e-5)   # SUM
    with pytest.raises(ValueError, match="Unsupported optimizer name: Momentum"):
        tf.estimator.DNNRegressor([2], cols, model_dir=str(tmp_path / "f"),
                                  optimizer="Momentum").train(
            tf.estimator.inputs.numpy_input_fn({"x": x}, y, shuffle=False), steps=1)


def test_classifier_labels_out_of_range_raise_at_run_time(tmp_path):
    cols = [tf.feature_column.numeric_column("x", shape=(2,))]
    est = tf.estimator.DNNClassifier([3], cols, model_dir=str(tmp_path), n_classes=3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Labels must <= n_classes - 1"):
        est.train(_input(y=np.full(40, 3)), steps=1)
    with pytest.raises(ValueError, match="Could not find trained model at"):
        next(est.predict(_input(num_epochs=1), checkpoint_path=str(tmp_path / "nothing")))


def _cnn_model_fn(features, labels, mode):
    """The TF 1.x layers tutorial's model_fn (cnn_mnist.py), on 8x8 images."""
    net = tf.reshape(features["x"], [-1, 8, 8, 1])
    net = tf.layers.conv2d(net, filters=4, kernel_size=[3, 3], padding="same",
                           activation=tf.nn.relu)
    net = tf.layers.max_pooling2d(net, pool_size=[2, 2], strides=2)
    net = tf.layers.dense(tf.reshape(net, [-1, 4 * 4 * 4]), units=16, activation=tf.nn.relu)
    net = tf.layers.dropout(net, rate=0.2, training=mode == tf.estimator.ModeKeys.TRAIN)
    logits = tf.layers.dense(net, units=2)
    predictions = {"classes": tf.argmax(input=logits, axis=1),
                   "probabilities": tf.nn.softmax(logits, name="softmax_tensor")}
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode=mode, predictions=predictions)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    if mode == tf.estimator.ModeKeys.TRAIN:
        optimizer = tf.train.GradientDescentOptimizer(learning_rate=0.1)
        train_op = optimizer.minimize(loss=loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)
    eval_metric_ops = {"accuracy": tf.metrics.accuracy(labels=labels,
                                                       predictions=predictions["classes"])}
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, eval_metric_ops=eval_metric_ops)


def test_the_layers_tutorial_model_fn_with_a_logging_hook_by_tensor_name(tmp_path):
    images = RNG.random((64, 64)).astype(np.float32)
    labels = (images[:, :32].mean(1) > images[:, 32:].mean(1)).astype(np.int32)
    images[labels == 1, :32] += 0.5
    classifier = tf.estimator.Estimator(model_fn=_cnn_model_fn, model_dir=str(tmp_path),
                                        config=tf.estimator.RunConfig(tf_random_seed=0))
    logged = []
    hook = tf.train.LoggingTensorHook(tensors={"probabilities": "softmax_tensor"},
                                      every_n_iter=10, formatter=logged.append)
    train_input_fn = tf.estimator.inputs.numpy_input_fn(x={"x": images}, y=labels,
                                                        batch_size=16, num_epochs=None,
                                                        shuffle=True)
    classifier.train(input_fn=train_input_fn, steps=60, hooks=[hook])
    assert len(logged) == 6 and logged[0]["probabilities"].shape == (16, 2)
    eval_input_fn = tf.estimator.inputs.numpy_input_fn(x={"x": images}, y=labels,
                                                       num_epochs=1, shuffle=False)
    result = classifier.evaluate(input_fn=eval_input_fn)
    assert result["accuracy"] > 0.9 and result["global_step"] == 60
    classes = [p["classes"] for p in classifier.predict(eval_input_fn)]
    np.testing.assert_allclose(np.mean(np.array(classes) == labels), result["accuracy"])


def test_linear_classifier_matches_tf_trained_by_hand(tmp_path):
    """TF's linear_model (a weight per column, in name order, and a bias; zeros) with the
    softmax head and FTRL at min(0.2, 1/sqrt(2)), in real tf.compat.v1, on the same batches."""
    tf1 = pytest.importorskip("tensorflow").compat.v1
    x, _ = _separable(24)
    y = (np.argsort(np.argsort(x[:, 1])) * 3 // 24).astype(np.int64)
    cols = [tf.feature_column.numeric_column("b"), tf.feature_column.numeric_column("a")]
    est = tf.estimator.LinearClassifier(cols, model_dir=str(tmp_path), n_classes=3)
    est.train(tf.estimator.inputs.numpy_input_fn({"a": x[:, 0], "b": x[:, 1]}, y,
                                                 batch_size=10, num_epochs=None,
                                                 shuffle=False), steps=5)
    g = tf1.Graph()
    with g.as_default():
        wa, wb = (tf1.Variable(np.zeros((1, 3), np.float32)) for _ in "ab")
        bias = tf1.Variable(np.zeros(3, np.float32))
        xs, ys = tf1.placeholder(tf1.float32, [None, 2]), tf1.placeholder(tf1.int64, [None])
        logits = tf1.matmul(xs[:, :1], wa) + tf1.matmul(xs[:, 1:], wb) + bias
        loss = tf1.reduce_sum(tf1.nn.sparse_softmax_cross_entropy_with_logits(labels=ys,
                                                                              logits=logits))
        step = tf1.train.FtrlOptimizer(0.2).minimize(loss)
        with tf1.Session(graph=g) as sess:
            sess.run(tf1.global_variables_initializer())
            for rows in _batches(24, 10, 5):
                sess.run(step, {xs: x[rows], ys: y[rows]})
            want = sess.run([wa, wb, bias])
    names = ["linear/linear_model/a/weights", "linear/linear_model/b/weights",
             "linear/linear_model/bias_weights"]
    for n, w in zip(names, want):
        np.testing.assert_allclose(est.get_variable_value(n), w, rtol=1e-4, atol=1e-6,
                                   err_msg=n)
    x1 = np.linspace(-1, 1, 16).astype(np.float32)
    reg = tf.estimator.LinearRegressor([tf.feature_column.numeric_column("x")],
                                       model_dir=str(tmp_path / "r"),
                                       optimizer=lambda: tf.train.GradientDescentOptimizer(0.02))
    fn = tf.estimator.inputs.numpy_input_fn({"x": x1}, 3 * x1 - 1, batch_size=16,
                                            num_epochs=None, shuffle=False)
    reg.train(fn, steps=60)
    np.testing.assert_allclose(reg.get_variable_value("linear/linear_model/x/weights"), [[3.0]],
                               rtol=1e-3)


def test_run_config_defaults_and_replace():
    c = tf.estimator.RunConfig()
    assert (c.save_checkpoints_secs, c.save_checkpoints_steps, c.keep_checkpoint_max,
            c.log_step_count_steps, c.save_summary_steps, c.model_dir) == (600, None, 5, 100,
                                                                         100, None)
    d = c.replace(save_checkpoints_steps=10, tf_random_seed=3)
    assert (d.save_checkpoints_secs, d.save_checkpoints_steps, d.tf_random_seed) == (None, 10, 3)
    assert c.save_checkpoints_steps is None   # replace makes a copy
    with pytest.raises(ValueError, match="not supported"):
        c.replace(master="grpc://x")
    with pytest.raises(NotImplementedError, match="distribution strategies"):
        tf.estimator.RunConfig(train_distribute=object())


def test_monitored_training_session_resumes_and_ends_with_the_input(tmp_path):
    class Ends(tf.train.SessionRunHook):
        ended = 0

        def end(self, session):
            Ends.ended += 1

    def build():
        step = tf.train.get_or_create_global_step()
        x = tf.data.Dataset.range(4).make_one_shot_iterator().get_next()
        return step, tf.group(tf.assign_add(step, 1), x)
    with tf.Graph().as_default():
        _, train_op = build()
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                               hooks=[Ends()]) as sess:
            while not sess.should_stop():   # the dataset's end leaves the block quietly
                sess.run(train_op)
        assert Ends.ended == 1 and sess.should_stop()
        with pytest.raises(RuntimeError, match="closed MonitoredSession"):
            sess.run(train_op)
    assert os.path.basename(tf.train.latest_checkpoint(str(tmp_path))) == "model.ckpt-4"
    with tf.Graph().as_default():
        step, train_op = build()
        with tf.train.MonitoredTrainingSession(
                checkpoint_dir=str(tmp_path), save_checkpoint_steps=1,
                hooks=[tf.train.StopAtStepHook(num_steps=2), Ends()]) as sess:
            assert sess.run(step) == 4   # restored
            while not sess.should_stop():
                sess.run(train_op)
            assert sess.run(step) == 6
        with pytest.raises(ZeroDivisionError):
            with tf.train.MonitoredTrainingSession(hooks=[Ends()]) as sess:
                1 / 0
    assert Ends.ended == 2   # not called when the block raised
    with pytest.raises(NotImplementedError, match="is_chief=False"):
        tf.train.MonitoredTrainingSession(is_chief=False)


def test_spec_hooks_scaffold_init_fn_and_nan_loss(tmp_path):
    calls = []

    class Seen(tf.train.SessionRunHook):
        def __init__(self, tag):
            self.tag = tag

        def begin(self):
            calls.append(self.tag)

    def model_fn(features, labels, mode, params):
        spec = _linear_model_fn(features, labels, mode, params)
        w = [v for v in tf.global_variables() if v.name == "w:0"][0]
        return spec._replace(
            training_hooks=(Seen("train"),), evaluation_hooks=(Seen("eval"),),
            prediction_hooks=(Seen("predict"),),
            scaffold=tf.train.Scaffold(init_fn=lambda scaffold, sess: w.load(
                np.full((2, 1), 0.25, np.float32), sess)))
    est = tf.estimator.Estimator(model_fn, str(tmp_path), params={"lr": 0.0})
    est.train(_input(), steps=1)
    np.testing.assert_array_equal(est.get_variable_value("w"), np.full((2, 1), 0.25))
    est.evaluate(_input(num_epochs=1))
    list(est.predict(_input(num_epochs=1)))
    assert calls == ["train", "eval", "predict"]

    def nan_model_fn(features, labels, mode, params):
        spec = _linear_model_fn(features, labels, mode, params)
        return spec._replace(loss=spec.loss * np.float32("nan"))
    nan = tf.estimator.Estimator(nan_model_fn, str(tmp_path / "nan"), params={"lr": 0.1})
    with pytest.raises(tf.train.NanLossDuringTrainingError, match="NaN loss during training"):
        nan.train(_input(), steps=3)

"""More TF1 names from the census, used as TF1 programs use them and checked against real
TensorFlow (tf.compat.v1, graph mode) where it is installed: summary.image (pixels decoded by
TF's own PNG decoder, tags, per-image normalisation, non-finite pixels), tf.Summary built in
Python, matrix_determinant and its gradient, keras.datasets.mnist.load_data (offline).
Small inputs: a few seconds, plus TensorFlow's import."""
import os

import numpy as np
import pytest

from dualgrad import graph as tf

pytest.importorskip("tensorboard")

IMAGES = [np.array([0, .5, 1, 2, 3, 4.]), np.array([-1, -.5, 0, .5, 1, 2.]),
          np.array([-4, -.5, 0, .5, 1, 2.]), np.zeros(6), np.array([np.nan, 1, np.inf, 0, 2, 3])]


def _values(lib, summary_bytes):
    pb = lib.Summary()
    pb.ParseFromString(summary_bytes)
    return pb.value


def _run_image_summaries(lib, batch, max_outputs):
    g = lib.Graph()
    with g.as_default():
        x = lib.placeholder(lib.float32 if batch.dtype != np.uint8 else lib.uint8,
                            [None] + list(batch.shape[1:]))
        s = lib.summary.image("img", x, max_outputs=max_outputs)
        with lib.Session(graph=g) as sess:
            return sess.run(s, {x: batch})


@pytest.fixture(scope="module")
def rtf():
    return pytest.importorskip("tensorflow")


def _decoded(rtf, pngs):
    """TF's own PNG decoder, in a graph of its own (the process's eager mode untouched)."""
    g = rtf.Graph()
    with g.as_default(), rtf.compat.v1.Session(graph=g) as sess:
        return sess.run([rtf.image.decode_png(p) for p in pngs])


@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize("max_outputs", [1, 2])
def test_image_summaries_decode_to_tensorflows_pixels(rtf, channels, max_outputs):
    rng = np.random.default_rng(channels)
    batch = np.stack([np.repeat(v.reshape(2, 3, 1), channels, axis=2) *
                      rng.uniform(0.5, 2, size=channels) for v in IMAGES]).astype(np.float32)
    v1 = rtf.compat.v1
    ours = _values(v1, _run_image_summaries(tf, batch, max_outputs))
    theirs = _values(v1, _run_image_summaries(v1, batch, max_outputs))
    assert [v.tag for v in ours] == [v.tag for v in theirs]
    for a, b in zip(ours, theirs):
        assert (a.image.height, a.image.width, a.image.colorspace) == \
            (b.image.height, b.image.width, b.image.colorspace)
        pa, pb = _decoded(rtf, [a.image.encoded_image_string, b.image.encoded_image_string])
        np.testing.assert_array_equal(pa, pb, err_msg=a.tag)


def test_uint8_images_are_written_unchanged_and_bad_shapes_raise(rtf):
    batch = np.random.default_rng(0).integers(0, 256, size=(2, 4, 5, 3)).astype(np.uint8)
    values = _values(rtf.compat.v1, _run_image_summaries(tf, batch, 3))
    assert [v.tag for v in values] == ["img/image/0", "img/image/1"]
    for v, pixels in zip(values, _decoded(rtf, [v.image.encoded_image_string for v in values])):
        np.testing.assert_array_equal(pixels, batch[int(v.tag[-1])])
    with pytest.raises(ValueError, match="1, 3 or 4 channels"):
        _run_image_summaries(tf, np.zeros((1, 2, 2, 2), np.float32), 1)


def test_a_summary_built_in_python_is_written_and_read_back(tmp_path):
    s = tf.Summary(value=[tf.Summary.Value(tag="accuracy", simple_value=0.75)])
    assert isinstance(s, tf.Summary)
    with tf.summary.FileWriter(str(tmp_path)) as w:
        w.add_summary(s, global_step=3)
    back = tf.Summary()
    back.ParseFromString(s.SerializeToString())
    assert back.value[0].tag == "accuracy" and back.value[0].simple_value == 0.75
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    assert [(e.step, e.value) for e in acc.Scalars("accuracy")] == [(3, 0.75)]


def test_matrix_determinant_and_its_gradient_match_tensorflow(rtf):
    x = np.random.default_rng(1).normal(size=(3, 4, 4)).astype(np.float32)
    got = []
    for lib in (tf, rtf.compat.v1):
        g = lib.Graph()
        with g.as_default():
            a = lib.placeholder(lib.float32, [None, 4, 4])
            d = lib.matrix_determinant(a)
            grad = lib.gradients(lib.reduce_sum(d * d), a)[0]
            with lib.Session(graph=g) as sess:
                got.append(sess.run([d, grad], {a: x}))
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-5)
    np.testing.assert_allclose(got[0][1], got[1][1], rtol=1e-4, atol=1e-5)


def test_keras_mnist_reads_the_cached_file_and_never_downloads(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="mnist.npz is missing.*never downloads"):
        tf.keras.datasets.mnist.load_data()
    os.makedirs(tmp_path / "datasets")
    rng = np.random.default_rng(0)
    parts = {"x_train": rng.integers(0, 256, (6, 28, 28)).astype(np.uint8),
             "y_train": np.arange(6, dtype=np.uint8), "x_test": np.zeros((2, 28, 28), np.uint8),
             "y_test": np.array([3, 4], np.uint8)}
    np.savez(tmp_path / "datasets" / "mnist.npz", **parts)
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.mnist.load_data()
    np.testing.assert_array_equal(x_train, parts["x_train"])
    assert y_test.tolist() == [3, 4] and x_test.shape == (2, 28, 28)
    assert not hasattr(tf.keras, "layers")   # no Keras beyond its data: AttributeError


def _init_from_checkpoint_program(lib, tmp, mapping):
    """Save scoped variables, then initialise a new model's variables from the checkpoint
    through `mapping(new_vars)`; what the new variables hold (or the error's type)."""
    os.makedirs(tmp)
    g = lib.Graph()
    with g.as_default():
        with lib.variable_scope("old"):
            lib.get_variable("w", initializer=np.arange(6, dtype=np.float32).reshape(2, 3))
            lib.get_variable("b", initializer=np.full(3, 5.0, np.float32))
        lib.get_variable("top", initializer=np.ones(2, np.float32))
        with lib.Session(graph=g) as sess:
            sess.run(lib.global_variables_initializer())
            lib.train.Saver().save(sess, os.path.join(tmp, "model"), global_step=7)
    g = lib.Graph()
    with g.as_default():
        with lib.variable_scope("new"):
            new = {"w": lib.get_variable("w", shape=[2, 3], initializer=lib.zeros_initializer()),
                   "b": lib.get_variable("b", shape=[3], initializer=lib.zeros_initializer())}
        new["top"] = lib.get_variable("top", shape=[2], initializer=lib.zeros_initializer())
        try:
            lib.train.init_from_checkpoint(tmp, mapping(new))
        except (ValueError, NotImplementedError) as e:
            return type(e).__name__
        with lib.Session(graph=g) as sess:
            sess.run(lib.global_variables_initializer())
            return {k: sess.run(v).tolist() for k, v in sorted(new.items())}


@pytest.mark.parametrize("mapping", [
    lambda v: {"old/": "new/"}, lambda v: {"old/b": "new/b", "top": "top"},
    lambda v: [("old/w", v["w"]), ("old/b", v["b"])], lambda v: {"old/w": "new/b"},
    lambda v: {"old/missing": "new/w"}, lambda v: {"old/": "new"}],
    ids=["scope", "names", "variables", "shape-mismatch", "missing", "scope-to-name"])
def test_init_from_checkpoint_does_what_tensorflows_does(rtf, tmp_path, mapping):
    ours = _init_from_checkpoint_program(tf, str(tmp_path / "ours"), mapping)
    theirs = _init_from_checkpoint_program(rtf.compat.v1, str(tmp_path / "theirs"), mapping)
    assert ours == theirs


def test_contrib_layers_dropout_drops_while_training_only():
    x = tf.placeholder(tf.float32, [8, 500])
    training = tf.placeholder(tf.bool, [])
    y = tf.contrib.layers.dropout(x, keep_prob=0.8, is_training=training)
    z = tf.contrib.layers.dropout(x, 0.5, is_training=False)
    ones = np.ones((8, 500), np.float32)
    with tf.Session() as sess:
        on, off, fixed = sess.run(y, {x: ones, training: True}), \
            sess.run(y, {x: ones, training: False}), sess.run(z, {x: ones})
    assert set(np.unique(on)) == {0.0, 1.25} and abs((on == 0).mean() - 0.2) < 0.03
    assert (off == 1).all() and (fixed == 1).all()


def test_tensorflow_python_paths_are_the_public_objects():
    assert tf.python.platform.gfile is tf.gfile
    assert tf.python.framework.ops.convert_to_tensor is tf.convert_to_tensor
    assert tf.python.ops.array_ops.identity is tf.identity
    assert tf.python.ops.random_ops.random_uniform is tf.random_uniform
    assert tf.python.util.compat.as_bytes("ab") == b"ab"

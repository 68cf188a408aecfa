"""The TF1 names the census found missing, used as TF1 programs use them: tf.data pipelines
feeding a graph, flags / app.run, logging, gfile, TFRecord files and Examples (checked
byte for byte against real TensorFlow when it is installed), the MNIST tutorial loader
(offline), contrib.layers, sampled losses. Small data: the module runs in a few seconds
(plus TensorFlow's import for the byte-compatibility checks)."""
import gzip
import os
import subprocess
import sys

import numpy as np
import pytest

from dualgrad import graph as tf


def _drain(sess, t):
    out = []
    try:
        while True:
            out.append(sess.run(t))
    except tf.errors.OutOfRangeError:
        return out


def test_pipeline_batches_repeats_and_ends_with_out_of_range():
    ds = tf.data.Dataset.from_tensor_slices((np.arange(10, dtype=np.float32),
                                             np.arange(10))).repeat(2).batch(4)
    x, y = ds.make_one_shot_iterator().get_next()
    assert x.shape.as_list() == [None] and y.dtype == tf.int64
    with tf.Session() as sess:
        batches = _drain(sess, [x, y])
    assert [len(b[0]) for b in batches] == [4, 4, 4, 4, 4]
    assert np.concatenate([b[1] for b in batches]).tolist() == list(range(10)) * 2


def test_drop_remainder_gives_a_static_batch_dimension():
    ds = tf.data.Dataset.range(10).batch(4, drop_remainder=True)
    t = ds.make_one_shot_iterator().get_next()
    assert t.shape.as_list() == [4]
    with tf.Session() as sess:
        assert [b.tolist() for b in _drain(sess, t)] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_map_filter_take_skip_zip_run_traced_functions():
    a = tf.data.Dataset.range(20).filter(lambda i: tf.equal(i % 3, 0)).map(
        lambda i: tf.cast(i, tf.float32) * 0.5)
    b = tf.data.Dataset.range(100, 200)
    ds = tf.data.Dataset.zip((a, b)).skip(1).take(3)
    x, y = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        got = _drain(sess, [x, y])
    assert [(float(u), int(v)) for u, v in got] == [(1.5, 101), (3.0, 102), (4.5, 103)]


def test_shuffle_uses_a_buffer_and_is_a_permutation():
    ds = tf.data.Dataset.range(50).shuffle(buffer_size=5, seed=3)
    t = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        got = [int(v) for v in _drain(sess, t)]
    assert sorted(got) == list(range(50)) and got != list(range(50))
    # NOTE: with a buffer of 5 an element can come out at most 4 places early
    assert all(v <= i + 4 for i, v in enumerate(got))


def test_pipelines_are_lazy():
    pulled = []

    def gen():
        for i in range(10 ** 12):
            pulled.append(i)
            yield np.float32(i)
    ds = tf.data.Dataset.from_generator(gen, tf.float32, tf.TensorShape([]))
    t = ds.shuffle(8).batch(4).prefetch(1).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sess.run(t).shape == (4,)
    assert len(pulled) < 30


def test_initializable_iterator_restarts_and_reusable_iterator_switches_datasets():
    train = tf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.float32)).batch(3)
    test = tf.data.Dataset.from_tensor_slices(np.full(2, -1, np.float32)).batch(3)
    it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
    x = it.get_next()
    loss = tf.reduce_sum(x * 2.0)
    init_train, init_test = it.make_initializer(train), it.make_initializer(test)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError):
            sess.run(x)
        sess.run(init_train)
        assert [float(v) for v in _drain(sess, loss)] == [6.0, 24.0]
        sess.run(init_test)
        assert [float(v) for v in _drain(sess, loss)] == [-4.0]
    ds = tf.data.Dataset.range(3)
    it2 = ds.make_initializable_iterator()
    n = it2.get_next()
    with tf.Session() as sess:
        for _ in range(2):
            sess.run(it2.initializer)
            assert [int(v) for v in _drain(sess, n)] == [0, 1, 2]


def test_a_model_trains_from_an_iterator():
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(64, 3)).astype(np.float32)
    ys = xs @ np.array([[1.0], [-2.0], [0.5]], np.float32)
    ds = tf.data.Dataset.from_tensor_slices((xs, ys)).shuffle(64, seed=1).repeat().batch(16)
    x, y = ds.make_one_shot_iterator().get_next()
    w = tf.Variable(np.zeros((3, 1), np.float32))
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss)
        for _ in range(100):
            sess.run(step)
        assert sess.run(loss) < first * 0.01


def test_graph_mode_datasets_are_not_python_iterables():
    with pytest.raises(RuntimeError, match="make_one_shot_iterator"):
        iter(tf.data.Dataset.range(3))


def test_flags_and_app_run(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(
        "from dualgrad import graph as tf\n"
        "tf.flags.DEFINE_integer('steps', 3, 'steps')\n"
        "tf.app.flags.DEFINE_string('name', 'x', 'a name')\n"
        "tf.flags.DEFINE_boolean('fast', False, 'go fast')\n"
        "tf.flags.DEFINE_float('lr', 0.1, 'rate')\n"
        "FLAGS = tf.flags.FLAGS\n"
        "def main(argv):\n"
        "    print(FLAGS.steps * 2, FLAGS.name, FLAGS.fast, FLAGS.lr, argv[1:])\n"
        "if __name__ == '__main__':\n"
        "    tf.app.run()\n")
    out = subprocess.run([sys.executable, str(script), "--steps=5", "--name", "y", "--fast",
                          "rest"], capture_output=True, text=True, timeout=60)
    assert out.stdout.split("\n")[0] == "10 y True 0.1 ['rest']", out.stderr
    bad = subprocess.run([sys.executable, str(script), "--steps=many"], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 1 and "--steps=many" in bad.stderr


def test_required_flag():
    fl = tf.flags.FlagValues()
    fl.DEFINE_string("data_dir", None, "where")
    fl.mark_flag_as_required("data_dir")
    with pytest.raises(tf.flags.IllegalFlagValueError, match="data_dir"):
        fl(["prog"])
    assert fl(["prog", "--data_dir=/d"]) == ["prog"] and fl.data_dir == "/d"


def test_logging_and_gfile(tmp_path, capsys):
    tf.logging.set_verbosity(tf.logging.INFO)
    tf.logging.info("step %d", 3)
    assert "INFO:tensorflow:step 3" in capsys.readouterr().err
    tf.logging.set_verbosity(tf.logging.WARN)
    d = tmp_path / "a" / "b"
    tf.gfile.MakeDirs(str(d))
    with tf.gfile.GFile(str(d / "f.txt"), "w") as f:
        f.write("one\ntwo\n")
    with tf.gfile.FastGFile(str(d / "f.txt"), "r") as f:
        assert f.readline() == "one\n"
    assert tf.gfile.Exists(str(d)) and tf.gfile.Glob(str(d / "*.txt")) == [str(d / "f.txt")]
    tf.gfile.DeleteRecursively(str(tmp_path / "a"))
    assert not tf.gfile.Exists(str(d))
    with pytest.raises(ValueError, match="local"):
        tf.gfile.Exists("gs://bucket/x")


def _example(i):
    return tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[i, i + 0.5])),
        "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[-i])),
        "s": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"ab" * i]))}))


def test_tfrecords_round_trip_through_a_dataset(tmp_path):
    path = str(tmp_path / "d.tfrecord")
    with tf.python_io.TFRecordWriter(path) as w:
        for i in range(5):
            w.write(_example(i).SerializeToString())
    feats = {"x": tf.FixedLenFeature([2], tf.float32), "y": tf.FixedLenFeature([], tf.int64)}
    ds = tf.data.TFRecordDataset([path]).map(lambda r: tf.parse_single_example(r, feats))
    el = ds.batch(5).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        got = sess.run(el)
    assert got["x"].tolist() == [[i, i + 0.5] for i in range(5)]
    assert got["y"].tolist() == [0, -1, -2, -3, -4]
    data = bytearray(open(path, "rb").read())
    data[20] ^= 1
    open(path, "wb").write(bytes(data))
    with pytest.raises(tf.io.DataLossError):
        list(tf.python_io.tf_record_iterator(path))


def test_tfrecords_and_examples_match_tensorflow_byte_for_byte(tmp_path):
    rtf = pytest.importorskip("tensorflow")
    ours, theirs = str(tmp_path / "ours.tfrecord"), str(tmp_path / "theirs.tfrecord")
    with tf.python_io.TFRecordWriter(ours) as w:
        for i in range(3):
            w.write(_example(i).SerializeToString())
    with rtf.io.TFRecordWriter(theirs) as w:
        for i in range(3):
            ex = rtf.train.Example(features=rtf.train.Features(feature={
                "x": rtf.train.Feature(float_list=rtf.train.FloatList(value=[i, i + 0.5])),
                "y": rtf.train.Feature(int64_list=rtf.train.Int64List(value=[-i])),
                "s": rtf.train.Feature(bytes_list=rtf.train.BytesList(value=[b"ab" * i]))}))
            w.write(ex.SerializeToString(deterministic=True))
            assert tf.train.Example.FromString(ex.SerializeToString()) == _example(i)
    assert [r.numpy() for r in rtf.data.TFRecordDataset(ours)] == \
        list(tf.python_io.tf_record_iterator(theirs))


def _idx(path, arr, magic):
    head = magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in arr.shape)
    with gzip.open(path, "wb") as f:
        f.write(head + arr.astype(np.uint8).tobytes())


def test_mnist_loader_reads_the_standard_files_and_never_downloads(tmp_path):
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte.gz.*4 of 4"):
        tf.examples.tutorials.mnist.input_data.read_data_sets(str(tmp_path), one_hot=True)
    rng = np.random.default_rng(0)
    for prefix, n in (("train", 30), ("t10k", 7)):
        _idx(tmp_path / f"{prefix}-images-idx3-ubyte.gz", rng.integers(0, 256, (n, 28, 28)), 2051)
        _idx(tmp_path / f"{prefix}-labels-idx1-ubyte.gz", rng.integers(0, 10, n), 2049)
    mnist = tf.examples.tutorials.mnist.input_data.read_data_sets(
        str(tmp_path), one_hot=True, validation_size=10)
    assert mnist.train.images.shape == (20, 784) and mnist.test.labels.shape == (7, 10)
    assert mnist.train.images.max() <= 1.0 and mnist.validation.num_examples == 10
    xs, ys = mnist.train.next_batch(15)
    xs2, _ = mnist.train.next_batch(15)
    assert xs.shape == (15, 784) and xs2.shape == (15, 784)
    assert mnist.train.epochs_completed == 1


def test_contrib_layers_and_sequence_loss():
    x = tf.placeholder(tf.float32, [None, 4, 4, 2])
    h = tf.contrib.layers.flatten(x)
    y = tf.contrib.layers.fully_connected(h, 3, activation_fn=None)
    assert h.shape.as_list() == [None, 32] and y.shape.as_list() == [None, 3]
    names = sorted(v.name for v in tf.trainable_variables())
    assert names[-2:] == ["fully_connected/biases:0", "fully_connected/weights:0"]
    logits = tf.constant(np.zeros((2, 3, 5), np.float32))
    loss = tf.contrib.seq2seq.sequence_loss(logits, tf.constant(np.zeros((2, 3), np.int32)),
                                            tf.ones([2, 3]))
    with tf.Session() as sess:
        assert np.isclose(sess.run(loss), np.log(5.0))


@pytest.mark.parametrize("loss_fn", [tf.nn.nce_loss, tf.nn.sampled_softmax_loss])
def test_sampled_losses_train_embeddings(loss_fn):
    tf.set_random_seed(0)
    vocab, dim = 50, 8
    inputs = tf.placeholder(tf.int64, [None])
    labels = tf.placeholder(tf.int64, [None, 1])
    emb = tf.Variable(tf.random_uniform([vocab, dim], -1.0, 1.0))
    w = tf.Variable(tf.truncated_normal([vocab, dim], stddev=0.3))
    b = tf.Variable(tf.zeros([vocab]))
    loss = tf.reduce_mean(loss_fn(weights=w, biases=b, labels=labels,
                                  inputs=tf.nn.embedding_lookup(emb, inputs),
                                  num_sampled=8, num_classes=vocab))
    step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    xs = np.arange(40) % vocab
    ys = ((xs + 1) % vocab)[:, None]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = np.mean([sess.run(loss, {inputs: xs, labels: ys}) for _ in range(5)])
        for _ in range(200):
            sess.run(step, {inputs: xs, labels: ys})
        last = np.mean([sess.run(loss, {inputs: xs, labels: ys}) for _ in range(5)])
    assert last < first * 0.5


def test_scaffolding_names():
    assert tf.__version__.startswith("1.")
    with tf.device("/gpu:0"):
        x = tf.constant(2.0) * 3.0
    tf.disable_v2_behavior()
    init = tf.initialize_all_variables()
    with tf.Session() as sess:
        sess.run(init)
        assert sess.run(x) == 6.0
    assert tf.string == np.dtype(object)
    with pytest.raises(NotImplementedError, match="dualgrad.eager"):
        tf.enable_eager_execution()


@pytest.mark.parametrize("module", ["data", "flags", "gfile", "io", "platform", "tf_logging",
                                    "moving_averages", "augment"])
def test_docstring_examples_run(module):
    import doctest
    import importlib
    tf.reset_default_graph()
    result = doctest.testmod(importlib.import_module(f"dualgrad.graph.{module}"))
    assert result.failed == 0 and result.attempted > 0


def test_exponential_moving_average_matches_tf1_rule():
    w = tf.Variable(np.array([1.0, 2.0], np.float32), name="w")
    step = tf.Variable(0, trainable=False)
    ema = tf.train.ExponentialMovingAverage(0.99, num_updates=step)
    update = ema.apply([w])
    assert ema.average(w).name == "w/ExponentialMovingAverage:0"
    assert list(ema.variables_to_restore()) == ["w/ExponentialMovingAverage", "Variable"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.assign(w, [3.0, 4.0]))
        sess.run(update)
        decay = min(0.99, 1.0 / 10.0)          # num_updates = 0
        np.testing.assert_allclose(sess.run(ema.average(w)),
                                   [1.0 + (1 - decay) * 2.0, 2.0 + (1 - decay) * 2.0],
                                   rtol=1e-6)


def test_layers_dense_object_shares_its_variables():
    x = tf.placeholder(tf.float32, [None, 3])
    layer = tf.layers.Dense(2, activation=tf.nn.relu, name="head")
    y1, y2 = layer(x), layer(x * 2.0)
    assert [v.name for v in layer.trainable_variables] == ["head/kernel:0", "head/bias:0"]
    assert len(tf.trainable_variables()) == 2
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b = sess.run([y1, y2], {x: np.ones((1, 3), np.float32)})
        np.testing.assert_allclose(np.maximum(2 * sess.run(tf.matmul(
            np.ones((1, 3), np.float32), layer.kernel)) + sess.run(layer.bias), 0), b, rtol=1e-6)


def test_draws_crops_flips_and_composites():
    tf.set_random_seed(3)
    img = np.arange(2 * 4 * 5 * 3, dtype=np.float32).reshape(2, 4, 5, 3)
    crop = tf.random_crop(img[0], [2, 3, 3])
    flip = tf.image.random_flip_left_right(img)
    gray = tf.image.rgb_to_grayscale(tf.constant(img))
    d = tf.diag(tf.constant([1.0, 2.0]))
    draws = tf.multinomial(tf.constant([[0.0, 0.0, -1e9]]), 200)
    with tf.Session() as sess:
        c, f, g, dd, m = sess.run([crop, flip, gray, d, draws])
    assert c.shape == (2, 3, 3) and any(np.array_equal(c, img[0][i:i + 2, j:j + 3])
                                        for i in range(3) for j in range(3))
    for k in range(2):
        assert np.array_equal(f[k], img[k]) or np.array_equal(f[k], img[k][:, ::-1])
    np.testing.assert_allclose(g[..., 0], img @ np.array([0.2989, 0.5870, 0.1140], np.float32),
                               rtol=1e-5)
    assert dd.tolist() == [[1.0, 0.0], [0.0, 2.0]]
    assert m.dtype == np.int64 and set(m.ravel()) == {0, 1}


def test_read_file_and_decode_csv_in_a_pipeline(tmp_path):
    (tmp_path / "d.csv").write_text("1.5,2,a\n,7,b\n")
    ds = tf.data.TextLineDataset(str(tmp_path / "d.csv")).map(
        lambda line: tuple(tf.decode_csv(line, [[0.0], [0], [""]])))
    x, n, s = ds.batch(2).make_one_shot_iterator().get_next()
    raw = tf.read_file(str(tmp_path / "d.csv"))
    with tf.Session() as sess:
        xv, nv, sv = sess.run([x, n, s])
        assert sess.run(raw) == b"1.5,2,a\n,7,b\n"
    assert xv.tolist() == [1.5, 0.0] and nv.tolist() == [2, 7] and list(sv) == ["a", "b"]


def test_contrib_helpers_and_old_names():
    hp = tf.contrib.training.HParams(lr=0.1, layers=2, name="x").parse("lr=0.5,layers=3")
    assert hp.values() == {"lr": 0.5, "layers": 3, "name": "x"}
    t = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    tiled = tf.contrib.seq2seq.tile_batch(t, 2)
    ds = tf.data.Dataset.range(5).apply(tf.contrib.data.map_and_batch(lambda i: i * 2, 2))
    nxt = ds.make_one_shot_iterator().get_next()
    v = tf.Variable(np.zeros((3, 4), np.float32))
    assert tf.contrib.slim.model_analyzer.analyze_vars([v]) == (12, 48)
    assert tf.estimator.ModeKeys.PREDICT == tf.contrib.learn.ModeKeys.INFER == "infer"
    assert tf.python.framework.tensor_shape.scalar().as_list() == []
    assert tf.compat.as_str(b"ab") == "ab" and tf.compat.v1 is tf
    assert tf.train.SummaryWriter is tf.summary.FileWriter and tf.nn.deconv2d is \
        tf.nn.conv2d_transpose
    with tf.Session() as sess:
        assert sess.run(tiled)[:, 0].tolist() == [0.0, 0.0, 3.0, 3.0]
        assert sess.run(nxt).tolist() == [0, 2]
        assert sess.run(tf.concat_v2([t, t], 0)).shape == (4, 3)


def test_logging_writes_to_the_stderr_of_the_moment():
    import contextlib
    import io
    tf.logging.warning("first")   # the logger exists before stderr is redirected
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        tf.logging.warning("later %d", 2)
    assert "WARNING:tensorflow:later 2" in buf.getvalue()

"""TF's GraphDef files, with real tf.compat.v1 as the oracle both ways: models built and
frozen in TF (convert_variables_to_constants) run in dualgrad after GraphDef.ParseFromString
+ import_graph_def with TF's outputs; dualgrad graphs written with as_graph_def run in TF's
import_graph_def with dualgrad's outputs; the messages' bytes and text read in both.
"""
import os

import numpy as np
import pytest

pytest.importorskip("tensorflow")

from dualgrad import graph as dg, ops  # noqa: E402
from dualgrad.graph.graph_def import MAX_TENSOR_BYTES, shape_proto  # noqa: E402
from dualgrad.graph.graph_def_import import GraphDefError  # noqa: E402
from dualgrad.graph.protobuf import DecodeError  # noqa: E402

from . import tf_oracle as O  # noqa: E402

RNG = np.random.default_rng(7)
IMAGES = RNG.standard_normal((2, 8, 8, 3)).astype(np.float32)
SEQ = RNG.standard_normal((2, 5, 3)).astype(np.float32)
ROWS = RNG.standard_normal((4, 6)).astype(np.float32)


@pytest.fixture(scope="module")
def tf():
    return O.load_tf()


def _init(tf1, shape):
    return tf1.constant_initializer(RNG.standard_normal(shape).astype(np.float32))


def _cnn(tf1):
    x = tf1.placeholder(tf1.float32, (None, 8, 8, 3), name="input")
    w = tf1.get_variable("w", (3, 3, 3, 4), initializer=_init(tf1, (3, 3, 3, 4)))
    h = tf1.nn.relu(tf1.nn.bias_add(tf1.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"),
                                    tf1.get_variable("b", (4,), initializer=_init(tf1, (4,)))))
    stats = [tf1.get_variable(n, (4,), initializer=tf1.constant_initializer(v))
             for n, v in (("g", 1.5), ("beta", 0.1), ("mean", 0.2), ("var", 2.0))]
    h, _, _ = tf1.nn.fused_batch_norm(h, *stats, epsilon=1e-3, is_training=False)
    dw = tf1.get_variable("dw", (3, 3, 4, 2), initializer=_init(tf1, (3, 3, 4, 2)))
    h = tf1.nn.relu6(tf1.nn.depthwise_conv2d(h, dw, [1, 2, 2, 1], "VALID"))
    h = tf1.nn.max_pool(tf1.pad(h, [[0, 0], [1, 1], [1, 1], [0, 0]]), [1, 2, 2, 1],
                        [1, 2, 2, 1], "SAME")
    h = tf1.nn.avg_pool(h, [1, 2, 2, 1], [1, 1, 1, 1], "VALID")
    h = tf1.reshape(h, [-1, int(np.prod(h.shape[1:]))])
    d = tf1.get_variable("d", (h.shape[1], 5), initializer=_init(tf1, (h.shape[1], 5)))
    logits = tf1.matmul(h, d)
    y = tf1.nn.softmax(logits, name="output")
    tf1.argmax(y, 1, name="cls")
    tf1.reduce_mean(tf1.sigmoid(tf1.transpose(logits)), axis=0, keepdims=True, name="mean")
    return ["output", "cls", "mean"]


def _rnn(tf1):
    r = tf1.placeholder(tf1.float32, (None, 5, 3), name="seq")
    cell = tf1.nn.rnn_cell.BasicRNNCell(4)
    _, state = tf1.nn.static_rnn(cell, tf1.unstack(r, axis=1), dtype=tf1.float32)
    z = tf1.squeeze(tf1.expand_dims(state, 1), [1])
    tf1.identity(tf1.concat([z, tf1.tanh(z) * 2.0 - 1.0], 1), name="rnn_out")
    with tf1.variable_scope("lstm"):
        lstm = tf1.nn.rnn_cell.BasicLSTMCell(3)
        outs, (c, h) = tf1.nn.static_rnn(lstm, tf1.unstack(r, axis=1), dtype=tf1.float32)
    with tf1.variable_scope("gru"):
        _, g = tf1.nn.static_rnn(tf1.nn.rnn_cell.GRUCell(2), tf1.unstack(r, axis=1),
                                 dtype=tf1.float32)
    tf1.identity(tf1.concat([c, h, outs[2], g], 1), name="gated_out")
    return ["rnn_out", "gated_out"]


def _frozen_in_tf(tf, build):
    """build(tf1) -> output node names; TF's frozen GraphDef bytes and TF's outputs."""
    tf1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        names = build(tf1)
        with tf1.Session(graph=g) as s:
            s.run(tf1.global_variables_initializer())
            frozen = tf1.graph_util.convert_variables_to_constants(s, g.as_graph_def(), names)
    data = frozen.SerializeToString()
    return data, names, _run_tf(tf, data, names)


def _feeds(names):
    return {k: v for k, v in (("input:0", IMAGES), ("seq:0", SEQ), ("x:0", ROWS))
            if k.split(":")[0] in names}


def _run(lib, data, fetches, **session_args):
    """The usual frozen-model code, the same for `lib` = tf.compat.v1 and dualgrad.graph."""
    g = lib.Graph()
    with g.as_default():
        gd = lib.GraphDef()
        gd.ParseFromString(data)
        lib.import_graph_def(gd, name="")
        with lib.Session(graph=g, **session_args) as s:
            return s.run([f + ":0" for f in fetches], _feeds({n.name for n in gd.node}))


def _run_tf(tf, data, fetches):
    return _run(tf.compat.v1, data, fetches)


def _run_dg(data, fetches, optimize=False):
    return _run(dg, data, fetches, optimize=optimize)


def _same(expected, got, rtol=1e-5):
    for a, b in zip(expected, got):
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
        np.testing.assert_allclose(b, a, rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("build", [_cnn, _rnn], ids=["cnn", "rnn"])
def test_tf_frozen_graph_runs_in_dualgrad_with_tf_outputs(tf, build):
    data, names, expected = _frozen_in_tf(tf, build)
    for optimize in (False, True):
        _same(expected, _run_dg(data, names, optimize))


def test_import_name_input_map_and_return_elements(tf):
    data, names, expected = _frozen_in_tf(tf, _rnn)
    gd = dg.GraphDef.FromString(data)
    with dg.Graph().as_default() as g:
        seq = dg.placeholder(dg.float32, (None, 5, 3), name="my_seq")
        out, op = dg.import_graph_def(gd, input_map={"seq:0": seq},
                                      return_elements=["rnn_out:0", "rnn_out"])
        assert out.name == "import/rnn_out:0" and op.name == "import/rnn_out"
        assert g.get_tensor_by_name("import/rnn_out:0") is out
        with dg.Session() as s:
            _same(expected, [s.run(out, {seq: SEQ})])
        dg.import_graph_def(gd)                       # a second import: 'import_1/...'
        assert g.get_operation_by_name("import_1/rnn_out").type == "identity"
        with pytest.raises(GraphDefError, match="not found in graph_def: .'nope:0'"):
            dg.import_graph_def(gd, input_map={"nope:0": seq})


def _dg_model():
    g = dg.Graph()
    with g.as_default():
        x = dg.placeholder(dg.float32, (None, 8, 8, 3), name="input")
        w = dg.Variable(RNG.standard_normal((3, 3, 3, 4)).astype(np.float32), name="w")
        h = dg.nn.relu(dg.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"))
        h = dg.nn.max_pool(h, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
        h = dg.nn.avg_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        h = dg.nn.conv2d(h, RNG.standard_normal((2, 2, 4, 5)).astype(np.float32),
                         [1, 2, 2, 1], "VALID")
        h = dg.reshape(h, [-1, 5])
        v = dg.Variable(RNG.standard_normal((5, 3)).astype(np.float32), name="v")
        y = dg.nn.softmax(dg.matmul(h, v), name="output")
        dg.argmax(y, 1, name="cls")
        n = dg.cast(dg.shape(x)[0], dg.float32)
        # NOTE: not "mean": as in TF, names are unique without case, and reduce_mean's is 'Mean'
        dg.identity(dg.reduce_mean(y[:, 1:], axis=1) * n - dg.tanh(y[:, 0]), name="score")
        loss = dg.reduce_sum(y * y)
        dg.train.GradientDescentOptimizer(0.1).minimize(loss)
    return g


def test_dualgrad_graph_runs_in_tf_after_freezing(tf, tmp_path):
    g = _dg_model()
    names = ["output", "cls", "score"]
    with g.as_default(), dg.Session(graph=g) as s:
        s.run(dg.global_variables_initializer())
        expected = s.run([n + ":0" for n in names], {"input:0": IMAGES})
        frozen = dg.graph_util.convert_variables_to_constants(s, g.as_graph_def(), names)
    assert not [n.op for n in frozen.node if n.op.startswith("dualgrad.")]
    path = dg.train.write_graph(frozen, str(tmp_path), "frozen.pb", as_text=False)
    with open(path, "rb") as f:
        data = f.read()
    _same(expected, _run_tf(tf, data, names))
    _same(expected, _run_dg(data, names, optimize=True))
    text = dg.train.write_graph(frozen, str(tmp_path), "frozen.pbtxt")
    from google.protobuf import text_format
    with open(text) as f:
        assert text_format.Parse(f.read(), tf.compat.v1.GraphDef()) == \
            tf.compat.v1.GraphDef.FromString(data)


def test_training_graph_writes_every_node_and_names_what_tf_cannot_run():
    gd = _dg_model().as_graph_def()
    ops = {n.op for n in gd.node}
    assert {"VariableV2", "Assign", "Conv2D"} - ops == {"Conv2D"}   # conv2d is unfold + matmul
    unsupported = sorted(op for op in ops if op.startswith("dualgrad."))
    assert unsupported, "the optimizer's gradient internals have no TF op"
    with dg.Graph().as_default(), pytest.raises(GraphDefError, match=r"node 'w' \(VariableV2\)"):
        dg.import_graph_def(gd)


def test_messages_read_tf_bytes_and_tf_reads_theirs(tf):
    data, _, _ = _frozen_in_tf(tf, _cnn)
    ours = dg.GraphDef.FromString(data)
    theirs = tf.compat.v1.GraphDef.FromString(data)
    for n in theirs.node:
        n.ClearField("experimental_type")      # NOTE: not read (docs: tf1-compat)
    assert tf.compat.v1.GraphDef.FromString(ours.SerializeToString()) == theirs
    from google.protobuf import text_format
    assert text_format.Parse(str(ours), tf.compat.v1.GraphDef()) == theirs
    for a, b in zip(ours.node, theirs.node):
        if a.op == "Const":
            np.testing.assert_array_equal(dg.make_ndarray(a.attr["value"].tensor),
                                          tf.make_ndarray(b.attr["value"].tensor))
    for v in (np.float16([1.5, -2]), np.int64([[1 << 40]]), np.array([b"a", b"\xff"]),
              np.array(True), np.complex64([1 + 2j])):
        t = dg.make_tensor_proto(v)
        tf_proto = type(tf.make_tensor_proto(0))
        np.testing.assert_array_equal(tf.make_ndarray(
            tf_proto.FromString(t.SerializeToString())), v)
        np.testing.assert_array_equal(dg.make_ndarray(
            type(t).FromString(tf.make_tensor_proto(v).SerializeToString())), v)


def test_import_meta_graph_of_a_dualgrad_checkpoint(tmp_path):
    prefix = str(tmp_path / "model")
    with dg.Graph().as_default():
        w = dg.Variable(np.arange(3, dtype=np.float32), name="w")
        dg.reduce_sum(w * 2.0, name="y")
        with dg.Session() as s:
            s.run(dg.global_variables_initializer())
            s.run(dg.assign(w, [1.0, 2.0, 4.0]))
            dg.train.Saver().save(s, prefix, global_step=3)
    with dg.Graph().as_default() as g:
        saver = dg.train.import_meta_graph(prefix + "-3.meta")
        with dg.Session() as s:
            saver.restore(s, prefix + "-3")
            assert s.run(g.get_tensor_by_name("y:0")) == 14.0
        with pytest.raises(dg.errors.GraphFileError, match="duplicate node name 'w/"):
            dg.train.import_meta_graph(prefix + "-3.meta")


def test_import_meta_graph_of_tf_says_its_variables_cannot_be_restored(tf, tmp_path):
    tf1 = tf.compat.v1
    path = str(tmp_path / "tf.meta")
    with tf.Graph().as_default():
        x = tf1.placeholder(tf1.float32, (None, 2), name="x")
        tf1.matmul(x, tf1.Variable(np.ones((2, 2), np.float32), name="w"), name="y")
        tf1.train.export_meta_graph(path)
    with dg.Graph().as_default():
        with pytest.raises(dg.errors.GraphFileError,
                           match="node 'w' .(VarHandleOp|VariableV2).: a TF variable.*"
                                 "TF checkpoint"):
            dg.train.import_meta_graph(path)
    with tf.Graph().as_default():
        tf1.nn.relu(tf1.placeholder(tf1.float32, (2,), name="x"), name="y")
        tf1.train.export_meta_graph(path)
    with dg.Graph().as_default() as g:
        assert dg.train.import_meta_graph(path) is None
        with dg.Session() as s:
            np.testing.assert_array_equal(s.run("y:0", {"x:0": [-1.0, 3.0]}), [0.0, 3.0])


def _graph_def(*nodes):
    gd = dg.GraphDef()
    for name, op, inputs, attrs in nodes:
        nd = gd.node.add(name=name, op=op, input=inputs)
        for k, v in attrs.items():
            nd.attr[k].CopyFrom(v)
    return gd


F32 = {"dtype": dg.AttrValue(type=1)}


@pytest.mark.parametrize("nodes, message", [
    ([("x", "Placeholder", [], F32), ("y", "LRN", ["x"], {})],
     r"node 'y' \(LRN\): op type 'LRN' is not supported"),
    ([("x", "Placeholder", [], F32), ("y", "dualgrad.slice_grad", ["x"], {})],
     r"node 'y' \(dualgrad.slice_grad\): op type 'dualgrad.slice_grad' is not supported"),
    ([("x", "Relu", ["y"], {}), ("y", "Relu", ["x"], {})], "part of a cycle"),
    ([("x", "Relu", ["nothere"], {})], "input 'nothere', which is not in the graph_def"),
    ([("x", "Placeholder", [], F32), ("x", "Relu", ["x"], {})], "two nodes are named 'x'"),
    ([("x", "Placeholder", [], F32), ("y", "Relu", ["x:3"], {})], "reads output 3 of node"),
    ([("c", "Const", [], {"dtype": dg.AttrValue(type=1), "value": dg.AttrValue(
        tensor=dg.make_tensor_proto(np.float32(1.0), shape=None))}),
      ("x", "Placeholder", [], F32),
      ("b", "FusedBatchNormV3", ["x", "c", "c", "c", "c"], {"is_training": dg.AttrValue(b=True)})],
     "is_training=True"),
    ([("x", "Placeholder", [], F32), ("s", "Placeholder", [], {"dtype": dg.AttrValue(type=3),
                                           "shape": dg.AttrValue(shape=shape_proto((2,)))}),
      ("y", "Reshape", ["x", "s"], {}), ("z", "ExpandDims", ["x", "s"], {})],
     r"node 'z' \(ExpandDims\): input 1 \(dim\) must be a constant"),
])
def test_import_errors_name_the_node(nodes, message):
    with dg.Graph().as_default(), pytest.raises(GraphDefError, match=message):
        dg.import_graph_def(_graph_def(*nodes))


def test_crafted_constants_are_refused_before_allocation():
    t = dg.make_tensor_proto(np.float32([1.0]))
    t.tensor_content = b""
    t.float_val = [1.0]
    t.tensor_shape = shape_proto((1 << 20, 1 << 20))    # one value repeated: 4 TiB
    gd = _graph_def(("c", "Const", [], {"dtype": dg.AttrValue(type=1),
                                        "value": dg.AttrValue(tensor=t)}))
    with dg.Graph().as_default(), pytest.raises(GraphDefError, match=f"{MAX_TENSOR_BYTES}"):
        dg.import_graph_def(gd)
    data = gd.SerializeToString()
    for cut in (1, 7, len(data) // 2, len(data) - 1):
        with pytest.raises(DecodeError, match="truncated"):
            dg.GraphDef.FromString(data[:cut])
    with pytest.raises(DecodeError, match="longer than 10 bytes"):
        dg.GraphDef.FromString(b"\x08" + b"\xff" * 11)


def test_graph_def_docs_example_file_names(tmp_path):
    g = _dg_model()
    with dg.Session(graph=g) as s:
        assert s.graph_def == g.as_graph_def()
    path = dg.train.write_graph(g, str(tmp_path / "logs"), "graph.pbtxt")
    assert path == os.path.join(str(tmp_path / "logs"), "graph.pbtxt")
    with open(path) as f:
        assert 'op: "VariableV2"' in f.read()


def _many_tf_ops(tf1):
    """One frozen-style graph (constants only) using the op types RULES reads beyond the
    models above; every output named out_<k>."""
    x = tf1.placeholder(tf1.float32, (None, 6), name="x")
    img = tf1.constant(RNG.standard_normal((1, 5, 5, 2)).astype(np.float32))
    i = tf1.constant(np.array([[7, -3, 5], [-8, 4, 9]], np.int32))
    w = tf1.placeholder_with_default(tf1.constant(np.float32(2.0)), ())
    a, b = tf1.split(x, 2, axis=1)
    c, d = tf1.split(x, [2, 4], axis=1)
    outs = [
        tf1.raw_ops.Add(x=a, y=b), tf1.add_n([a, b, a]), tf1.argmin(x, 1),
        tf1.matmul(tf1.reshape(x, [-1, 2, 3]), tf1.ones((3, 4)) * 0.5),
        tf1.nn.elu(x), tf1.where(tf1.greater(x, 0.0), x, -x * w), tf1.math.erf(x),
        tf1.exp(x) + tf1.log(tf1.abs(x) + 1.0), tf1.floor(x), tf1.math.floordiv(i, 3),
        tf1.math.floormod(i, 4), tf1.gather(x, [0, 2, 2], axis=1), tf1.nn.leaky_relu(x, 0.1),
        tf1.nn.log_softmax(x), tf1.reduce_max(x, 1), tf1.reduce_min(x, 0, keepdims=True),
        tf1.reduce_prod(d, 1), tf1.maximum(a, b) - tf1.minimum(a, b),
        tf1.pad(x, [[0, 0], [2, 1]], mode="REFLECT"), tf1.pad(x, [[0, 1], [0, 2]],
                                                              constant_values=3.0),
        -x, tf1.ones_like(x) + tf1.zeros_like(x), tf1.stack([a, b], axis=2),
        tf1.pow(tf1.abs(x), 1.5), tf1.math.reciprocal(x + 10.0), tf1.math.rsqrt(x * x + 1.0),
        tf1.nn.selu(x), tf1.slice(x, [0, 1], [-1, 3]), tf1.nn.softplus(x),
        tf1.sqrt(x * x), tf1.square(x), tf1.math.squared_difference(a, b),
        tf1.tile(tf1.constant([[1.0, 2.0]]), [2, 3]), tf1.unstack(x, axis=1)[4],
        tf1.cast(i, tf1.float32) + tf1.fill([2, 3], 0.5), tf1.gather(i, [1, 0]),
        tf1.equal(i, 5), tf1.not_equal(i, 5), tf1.less_equal(i, 4), tf1.greater_equal(i, 5),
        tf1.nn.sigmoid(c) * tf1.nn.relu6(c * 4.0),
        tf1.nn.avg_pool(img, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"),
        tf1.nn.max_pool(img, [1, 2, 2, 1], [1, 1, 1, 1], "VALID"),
        tf1.image.extract_patches(img, [1, 2, 3, 1], [1, 2, 1, 1], [1, 2, 1, 1], "SAME"),
        tf1.nn.depthwise_conv2d(img, np.ones((2, 2, 2, 3), np.float32) * 0.25,
                                [1, 1, 1, 1], "SAME"),
        tf1.nn.conv2d(img, np.full((3, 3, 2, 2), 0.1, np.float32), [1, 2, 2, 1], "SAME"),
        tf1.nn.conv2d(img, np.full((2, 2, 2, 1), 0.3, np.float32), [1, 1, 2, 1],
                      [[0, 0], [1, 2], [2, 0], [0, 0]]),
        tf1.squeeze(tf1.expand_dims(x, 0), [0]), tf1.transpose(tf1.reshape(x, [-1, 2, 3]),
                                                               [2, 0, 1]),
        tf1.strided_slice(x, [0, -1], [0, 0], [1, -2], begin_mask=1, end_mask=3),
        tf1.math.softmax(x, axis=0)[:, tf1.newaxis, 1],
        tf1.image.resize_bilinear(img, [7, 3]), tf1.image.resize_nearest_neighbor(img, [9, 4]),
        tf1.image.resize_bilinear(img, [3, 8], half_pixel_centers=True),
        tf1.nn.conv2d_transpose(img, np.full((3, 3, 4, 2), 0.2, np.float32), [1, 10, 10, 4],
                                [1, 2, 2, 1], "SAME"),
        tf1.clip_by_value(x, -0.5, 0.25), tf1.nn.softsign(x),
        *tf1.nn.top_k(x, 2),
    ]
    return [tf1.identity(t, name=f"out_{k}").op.name for k, t in enumerate(outs)]


def test_many_tf_op_types_import_with_tf_outputs(tf):
    data, names, expected = _frozen_in_tf(tf, _many_tf_ops)
    ops = {n.op for n in dg.GraphDef.FromString(data).node}
    assert {"Add", "AddN", "Elu", "Select", "Split", "SplitV", "MirrorPad", "PadV2",
            "Tile", "Unpack", "ExtractImagePatches", "DepthwiseConv2dNative",
            "PlaceholderWithDefault", "BatchMatMulV2", "FloorMod", "GatherV2", "ResizeBilinear",
            "Conv2DBackpropInput", "TopKV2"} <= ops
    _same(expected, _run_dg(data, names))


def test_many_dualgrad_node_types_run_in_tf(tf):
    g = dg.Graph()
    with g.as_default():
        x = dg.placeholder(dg.float32, (None, 6), name="x")
        i = dg.cast(dg.round(x * 3.0), dg.int32)
        outs = [
            dg.where(x > 0.5, x, dg.zeros_like(x)), dg.gather(x, [5, 0], axis=1),
            dg.pad(x, [[1, 1], [0, 2]], constant_values=-1.0), dg.concat([x, -x], 0),
            dg.squeeze(dg.expand_dims(x, 2), [2]), dg.cast(x >= 0.1, dg.float32),
            dg.cast(dg.equal(i, 1), dg.int32) + dg.cast(dg.not_equal(i, 0), dg.int32),
            dg.cast(x < 0.2, dg.float32) * dg.cast(x <= 0.3, dg.float32),
            dg.sign(x) + dg.floor(x) + dg.ceil(x) + dg.sin(x) * dg.cos(x) + dg.abs(x),
            dg.log1p(dg.abs(x)) + dg.math.expm1(x) + dg.math.erf(x) + dg.nn.softplus(x),
            dg.pow(dg.abs(x) + 1.0, 0.5), dg.math.floordiv(i, 2), dg.math.floormod(i, 3),
            dg.maximum(x, 0.0) - dg.minimum(x, 0.0), dg.sqrt(dg.abs(x)),
            dg.reduce_prod(x, 1), dg.reduce_max(x, 0, keepdims=True),
            dg.argmax(x, 0), x[..., None, 1:5:2], x[-1], dg.shape(x),
            dg.fill(dg.shape(x), 2.0), dg.reshape(x, dg.shape(x)) * 2.0,
            dg.ones_like(x), dg.transpose(dg.reshape(x, [-1, 2, 3]), [1, 2, 0]),
            dg.matmul(dg.reshape(x, [-1, 2, 3]), np.ones((3, 2), np.float32)),
            ops.pad(x, ((1, -2), (-3, 1)), value=2.0),   # NOTE: torch's cropping pad, traced
        ]
        names = [dg.identity(t, name=f"out_{k}").op.name for k, t in enumerate(outs)]
    with dg.Session(graph=g) as s:
        expected = s.run([n + ":0" for n in names], {"x:0": ROWS})
        frozen = dg.graph_util.convert_variables_to_constants(s, g.as_graph_def(), names)
    got = _run_tf(tf, frozen.SerializeToString(), names)
    _same(expected, got)


def test_tf_pad_refuses_negative_paddings_as_tf():
    with dg.Graph().as_default(), pytest.raises(ValueError, match="Paddings must be non-neg"):
        dg.pad(dg.placeholder(dg.float32, (None, 6)), [[0, 0], [-1, 2]])


def test_docs_list_every_imported_op_type():
    from dualgrad.graph.graph_def_import import supported_op_types
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "docs",
                           "tf1-compat.md")) as f:
        doc = f.read()
    section = doc[doc.index("## TF GraphDef files"):doc.index("## Queue-based")]
    types = set(supported_op_types()) - {"Variable", "VariableV2", "VarHandleOp"}
    listed = {t for t in types if f"`{t}`" in section or t.startswith("FusedBatchNorm")}
    assert types - listed == set()


def _layers(tf1, x, df):
    """conv, bias, batch norm, depthwise conv, max and average pooling in layout df, with
    constant weights (NCHW cannot run on TF's CPU kernels: its NHWC twin is the oracle)."""
    r = np.random.default_rng(11)
    w = r.standard_normal((3, 3, 3, 4)).astype(np.float32)
    h = tf1.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", data_format=df)
    h = tf1.nn.bias_add(h, np.arange(4, dtype=np.float32), data_format=df)
    stats = [tf1.constant(v, tf1.float32) for v in (r.random(4) + 0.5, r.random(4),
                                                    r.random(4), r.random(4) + 0.5)]
    h, _, _ = tf1.nn.fused_batch_norm(h, *stats, epsilon=1e-3, is_training=False,
                                      data_format=df)
    dw = r.standard_normal((2, 2, 4, 1)).astype(np.float32)
    strides = [1, 1, 2, 2] if df == "NCHW" else [1, 2, 2, 1]
    h = tf1.nn.depthwise_conv2d(tf1.nn.relu(h), dw, strides, "VALID", data_format=df)
    k = [1, 1, 2, 2] if df == "NCHW" else [1, 2, 2, 1]
    h = tf1.nn.max_pool(h, k, [1, 1, 1, 1], "SAME", data_format=df)
    return tf1.nn.avg_pool(h, k, k, "VALID", data_format=df)


def test_nchw_frozen_graph_matches_tf_nhwc(tf):
    tf1 = tf.compat.v1
    with tf.Graph().as_default() as g:
        x = tf1.placeholder(tf1.float32, (None, 8, 8, 3), name="input")
        with tf1.Session(graph=g) as s:
            expected = s.run(_layers(tf1, x, "NHWC"), {x: IMAGES}).transpose(0, 3, 1, 2)
    with tf.Graph().as_default() as g:
        x = tf1.placeholder(tf1.float32, (None, 3, 8, 8), name="input")
        tf1.identity(_layers(tf1, x, "NCHW"), name="out")
        data = g.as_graph_def().SerializeToString()
    assert {"Conv2D", "BiasAdd", "FusedBatchNormV3", "DepthwiseConv2dNative", "MaxPool",
            "AvgPool"} <= {n.op for n in dg.GraphDef.FromString(data).node}
    with dg.Graph().as_default():
        dg.import_graph_def(dg.GraphDef.FromString(data), name="")
        with dg.Session() as s:
            got = s.run("out:0", {"input:0": IMAGES.transpose(0, 3, 1, 2)})
    _same([expected], [got])


def test_every_op_tf_field_names_the_tf_op_that_computes_it(tf):
    """Each registry op's `tf` form, on positive float32 inputs, run by real TF."""
    from dualgrad import ops
    entries = sorted((n, op) for n, op in ops.REGISTRY.items() if op.tf)
    assert len(entries) >= 30
    g = dg.Graph()
    with g.as_default():
        xs = [dg.placeholder(dg.float32, (2, 3), name=f"in{i}") for i in range(2)]
        names = []
        for name, op in entries:
            arity = len(op.samples[0].args)
            dg.identity(op.fn(*xs[:arity]), name=f"out_{name}")
            names.append(f"out_{name}")
    feeds = {f"in{i}:0": RNG.random((2, 3)).astype(np.float32) + 0.5 for i in range(2)}
    with dg.Session(graph=g) as s:
        expected = s.run([n + ":0" for n in names], feeds)
    gd = g.as_graph_def()
    assert {op.tf for _, op in entries} <= {n.op for n in gd.node}
    tf1 = tf.compat.v1
    with tf.Graph().as_default() as tg:
        tf1.import_graph_def(tf1.GraphDef.FromString(gd.SerializeToString()), name="")
        with tf1.Session(graph=tg) as s:
            got = s.run([n + ":0" for n in names], feeds)
    for n, a, b in zip(names, expected, got):
        assert a.dtype == b.dtype, n
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=n)
    with dg.Graph().as_default():              # and back: each TF op type read by its entry
        dg.import_graph_def(dg.GraphDef.FromString(gd.SerializeToString()), name="")
        with dg.Session() as s:
            _same(got, s.run([n + ":0" for n in names], feeds))


def test_old_batch_norm_op_of_inception_era_graphs(tf):
    """BatchNormWithGlobalNormalization (GraphDef version < 9, e.g. 2015's Inception v3):
    TF no longer runs the op; its Python function, the same arithmetic, is the oracle."""
    stats = [np.float32(v) for v in ([0.1, 0.2], [1.5, 2.0], [0.0, 1.0], [2.0, 0.5])]
    with tf.Graph().as_default():
        with tf.compat.v1.Session() as s:
            expected = s.run(tf.compat.v1.nn.batch_norm_with_global_normalization(
                IMAGES[..., :2], *stats, 1e-3, True))
    consts = [(f"c{i}", "Const", [], {"dtype": dg.AttrValue(type=1),
                                      "value": dg.AttrValue(tensor=dg.make_tensor_proto(v))})
              for i, v in enumerate(stats)]
    shape = {"shape": dg.AttrValue(shape=shape_proto((None, 8, 8, 2)))}
    gd = _graph_def(("x", "Placeholder", [], {**F32, **shape}), *consts, (
        "bn", "BatchNormWithGlobalNormalization", ["x", "c0", "c1", "c2", "c3"],
        {"variance_epsilon": dg.AttrValue(f=1e-3), "scale_after_normalization":
         dg.AttrValue(b=True)}))
    with dg.Graph().as_default():
        dg.import_graph_def(gd, name="")
        with dg.Session() as s:
            _same([expected], [s.run("bn:0", {"x:0": IMAGES[..., :2]})])

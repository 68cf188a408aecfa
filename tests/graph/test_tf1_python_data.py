"""Python numbers and lists where TF1 programs pass tensors (`tf.nn.relu([-1., 2.])`,
`x + [1., 2.]`, `tf.concat([x, [[0., 0.]]], 0)`, `tf.constant([2 ** 40])`): each case is built
and run in real tf.compat.v1 and in dualgrad.graph, and must give TF's dtype and values, or
raise where TF raises at build time. TF's rule: Python floats are float32, ints int32 (int64
when too large for it); beside a tensor, Python data takes that tensor's dtype where TF
converts it so; with no tensor among an op's inputs, the first one's dtype leads."""
import numpy as np
import pytest

from dualgrad import graph as dg
from tests.graph.tf_oracle import load_tf

# each: a function of the TF1 module building the fetched value (a tensor or a list of them)
CASES = {
    "relu_of_list": lambda tf: tf.nn.relu([-1., 2.]),
    "exp_of_list": lambda tf: tf.exp([0., 1.]),
    "sigmoid_of_scalar": lambda tf: tf.sigmoid(0.5),
    "exp_of_float": lambda tf: tf.exp(1.0),
    "add_two_ints": lambda tf: tf.add(1, 2),
    "multiply_float_int": lambda tf: tf.multiply(2., 3),
    "add_float_list_int_list": lambda tf: tf.add([1.], [2]),
    "add_int_list_float_list": lambda tf: tf.add([1], [2.]),
    "constant_big_int": lambda tf: tf.constant([2 ** 40, 1]),
    "constant_int32_edge": lambda tf: tf.constant(2 ** 31),
    "constant_mixed": lambda tf: tf.constant([1, 2.5]),
    "f32_plus_list": lambda tf: tf.ones([2]) + [1., 2.],
    "f64_times_list": lambda tf: tf.ones([2], tf.float64) * [1., 2.],
    "f32_plus_int_list": lambda tf: tf.add(tf.ones([2]), [1, 2]),
    "int_list_plus_f32": lambda tf: [1, 2] + tf.ones([2]),
    "i32_plus_list": lambda tf: tf.ones([2], tf.int32) + [1, 2],
    "i64_times_list": lambda tf: tf.multiply(tf.ones([2], tf.int64), [1, 2]),
    "i32_plus_float_list": lambda tf: tf.ones([2], tf.int32) + [1.5, 2.],
    "i64_plus_big_int": lambda tf: tf.add([2 ** 40], tf.ones([1], tf.int64)),
    "f32_plus_np_f64": lambda tf: tf.ones([2]) + np.array([1., 2.]),
    "relu_of_np_f64": lambda tf: tf.nn.relu(np.array([-1., 2.])),
    "matmul_np_f64": lambda tf: tf.matmul(tf.ones([1, 2]), np.ones((2, 1))),
    "bias_add_np_f64": lambda tf: tf.nn.bias_add(tf.ones([1, 2]), np.array([1., 2.])),
    "maximum_list": lambda tf: tf.maximum(tf.ones([2]), [0.5, 3.]),
    "pow_list": lambda tf: tf.pow(tf.ones([2]), [2., 3.]),
    "equal_list": lambda tf: tf.equal(tf.ones([2]), [1., 0.]),
    "where_list": lambda tf: tf.where([True, False], tf.ones([2]), [5., 6.]),
    "gather_list": lambda tf: tf.gather([1., 2., 3.], tf.constant([2, 0])),
    "concat_tensor_list": lambda tf: tf.concat([tf.ones([2]), [3., 4.]], 0),
    "concat_list_f64": lambda tf: tf.concat([[1., 2.], tf.ones([2], tf.float64)], 0),
    "concat_list_i64": lambda tf: tf.concat([[1, 2], tf.constant([3], tf.int64)], 0),
    "stack_f64_list": lambda tf: tf.stack([tf.ones([2], tf.float64), [3., 4.]]),
    "stack_numbers": lambda tf: tf.stack([1, 2.5]),
    "add_n_mixed": lambda tf: tf.add_n([tf.ones([2], tf.float64), [3., 4.]]),
    "matmul_lists": lambda tf: tf.matmul([[1., 2.]], [[1.], [1.]]),
    "matmul_list_tensor": lambda tf: tf.matmul(tf.ones([1, 2]), [[1.], [2.]]),
    "bias_add_list": lambda tf: tf.nn.bias_add(tf.ones([1, 2]), [1., 2.]),
    "bias_add_int_list": lambda tf: tf.nn.bias_add(tf.ones([1, 2]), [1, 2]),
    "xw_plus_b_lists": lambda tf: tf.nn.xw_plus_b([[1., 2.]], [[1.], [1.]], [0.5]),
    "l2_loss_list": lambda tf: tf.nn.l2_loss([1., 2.]),
    "softmax_list": lambda tf: tf.nn.softmax([1., 2.]),
    "sigmoid_ce_lists": lambda tf: tf.nn.sigmoid_cross_entropy_with_logits(
        labels=[[0., 1.]], logits=[[1., 2.]]),
    "sigmoid_ce_list_labels": lambda tf: tf.nn.sigmoid_cross_entropy_with_logits(
        labels=[[0., 1., 1.]], logits=tf.constant([[1., 2., 3.]])),
    "softmax_ce_v2_list_labels": lambda tf: tf.nn.softmax_cross_entropy_with_logits_v2(
        labels=[[0., 1.]], logits=tf.ones([1, 2])),
    "sparse_ce_list_labels": lambda tf: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=[1], logits=tf.constant([[1., 2.]])),
    "weighted_ce_lists": lambda tf: tf.nn.weighted_cross_entropy_with_logits(
        labels=[[0., 1.]], logits=[[1., 2.]], pos_weight=2.),
    "mse_lists": lambda tf: tf.losses.mean_squared_error([1., 2.], [2., 2.]),
    "huber_lists": lambda tf: tf.losses.huber_loss([0.], [2.]),
    "clip_by_value_list": lambda tf: tf.clip_by_value([1., 5.], tf.constant(2.), 4.),
    "clip_by_norm_list": lambda tf: tf.clip_by_norm([3., 4.], 1.),
    "l2_normalize_list": lambda tf: tf.nn.l2_normalize([3., 4.], 0),
    "square_sqrt_lists": lambda tf: [tf.square([1., 2.]), tf.sqrt([4.]), tf.abs([-1])],
    "reduce_lists": lambda tf: [tf.reduce_sum([1., 2.]), tf.reduce_sum([1, 2]),
                                tf.reduce_max([[1, 2]], 1)],
    "squared_difference_list": lambda tf: tf.squared_difference(tf.ones([2]), [2., 3.]),
    "transpose_trace_lists": lambda tf: [tf.linalg.transpose([[1, 2]]),
                                         tf.linalg.trace([[1., 2.], [3., 4.]])],
    "cast_list": lambda tf: tf.cast([1.7, -1.7], tf.int32),
    # embedding_lookup's params as a list: shards (a Python list of rows is shards of rows)
    "embedding_list_params": lambda tf: tf.nn.embedding_lookup([[1., 2.], [3., 4.]], [1, 0]),
    "embedding_shards_mod": lambda tf: tf.nn.embedding_lookup(
        [tf.constant([[1., 2.], [3., 4.]]), tf.constant([[5., 6.]])], [0, 1, 2, 1]),
    "embedding_shards_div": lambda tf: tf.nn.embedding_lookup(
        [tf.constant([[1., 2.], [3., 4.]]), tf.constant([[5., 6.]])], [[0, 2], [1, 1]],
        partition_strategy="div"),
    "embedding_one_shard": lambda tf: tf.nn.embedding_lookup([tf.ones([3, 2])], [2]),
    "embedding_max_norm": lambda tf: tf.nn.embedding_lookup(
        tf.constant([[3., 4.], [0.3, 0.4]]), [0, 1, 0], max_norm=1.0),
}


def _run(tf, build):
    g = tf.Graph()
    with g.as_default():
        try:
            out = build(tf)
        except (TypeError, ValueError) as e:
            return ("raises", type(e).__name__)
        with tf.Session(graph=g) as s:
            return ("runs", s.run(out))


@pytest.fixture(scope="module")
def tf1():
    return load_tf().compat.v1


@pytest.mark.parametrize("name", sorted(CASES))
def test_python_data_as_tf1(name, tf1):
    want, got = _run(tf1, CASES[name]), _run(dg, CASES[name])
    assert got[0] == want[0], f"TF {want}, dualgrad {got}"
    if want[0] == "raises":
        return
    ws, gs = (v if isinstance(v, list) else [v] for v in (want[1], got[1]))
    assert len(ws) == len(gs)
    for w, o in zip(ws, gs):
        w, o = np.asarray(w), np.asarray(o)
        assert (o.dtype, o.shape) == (w.dtype, w.shape), f"TF {w!r}, dualgrad {o!r}"
        np.testing.assert_allclose(o, w, rtol=1e-6)

"""Smaller tf.compat.v1 names the census found missing, against real TensorFlow:
tensor_util.constant_value and smart_cond, Session.list_devices, the checkpoint readers and
keras.initializers' TF1 initialisers."""
import os

import numpy as np
import pytest

from dualgrad import graph as dg

tensorflow = pytest.importorskip("tensorflow")
tf = tensorflow.compat.v1
from tensorflow.python.framework import smart_cond as tf_smart, tensor_util  # noqa: E402

EXPRS = {
    "const": lambda L, x: L.constant([1, 2, 3]),
    "static shape": lambda L, x: L.shape(x),
    "shape times 2": lambda L, x: L.shape(x) * 2,
    "size": lambda L, x: L.size(x),
    "rank": lambda L, x: L.rank(x),
    "cast of const": lambda L, x: L.cast(L.constant([1.5, 2.5]), L.int32),
    "placeholder": lambda L, x: x,
    "op of placeholder": lambda L, x: x + 1.0,
    "dynamic shape": lambda L, x: L.shape(L.placeholder(L.float32, [None, 3])),
    "variable": lambda L, x: L.Variable([1.0]) * 1.0,
}


@pytest.mark.parametrize("case", EXPRS)
def test_constant_value_agrees_with_tf(case):
    def value(lib, fn):
        g = lib.Graph()
        with g.as_default():
            x = lib.placeholder(lib.float32, [2, 3])
            v = fn(EXPRS[case](lib, x))
        return None if v is None else (np.asarray(v).tolist(), np.asarray(v).dtype.name)
    want = value(tf, tensor_util.constant_value)
    got = value(dg, dg.python.framework.tensor_util.constant_value)
    if want is not None:
        assert got == want
    elif case == "shape times 2":   # NOTE: TF folds a fixed list of ops (no arithmetic);
        assert got == ([4, 6], "int32")   # dualgrad any stateless op over known values
    else:
        assert got is None


def test_smart_cond_calls_the_branch_now_or_builds_a_cond():
    for lib, sc in ((tf, tf_smart.smart_cond), (dg, dg.python.layers.utils.smart_cond)):
        g = lib.Graph()
        with g.as_default():
            assert sc(True, lambda: "yes", lambda: "no") == "yes"
            assert sc(lib.constant(False), lambda: "yes", lambda: "no") == "no"
            p = lib.placeholder(lib.bool, [])
            out = sc(p, lambda: lib.constant(1), lambda: lib.constant(2))
            with lib.Session(graph=g) as sess:
                assert sess.run(out, {p: False}) == 2


def test_list_devices_names_the_cpu_as_tf():
    with tf.Session() as s:
        want = [(d.name, d.device_type, d.memory_limit_bytes) for d in s.list_devices()]
    with dg.Session() as s:
        got = [(d.name, d.device_type, d.memory_limit_bytes) for d in s.list_devices()]
    assert got == want


def test_checkpoint_readers_give_what_was_saved(tmp_path):
    w = dg.Variable(np.arange(6.0, dtype=np.float32).reshape(2, 3), name="w")
    b = dg.Variable(np.zeros(3, np.int64), name="scope/b")
    with dg.Session() as s:
        s.run(dg.global_variables_initializer())
        path = dg.train.Saver().save(s, os.path.join(tmp_path, "m"))
    reader = dg.train.NewCheckpointReader(path)
    assert reader.get_variable_to_shape_map() == {"w": [2, 3], "scope/b": [3]}
    assert reader.get_variable_to_dtype_map()["scope/b"] == np.int64
    assert reader.has_tensor("w") and not reader.has_tensor("v")
    np.testing.assert_array_equal(reader.get_tensor("w"), np.arange(6.0).reshape(2, 3))
    assert dg.contrib.framework.list_variables(str(tmp_path)) == [("scope/b", [3]), ("w", [2, 3])]
    with pytest.raises(dg.errors.NotFoundError, match="Key v not found"):
        dg.contrib.framework.load_checkpoint(str(tmp_path)).get_tensor("v")
    assert w is not None and b is not None


@pytest.mark.parametrize("name", ["glorot_uniform", "glorot_normal", "he_normal", "lecun_uniform"])
def test_keras_initializers_are_tf1s_with_the_same_scale(name):
    init = getattr(dg.keras.initializers, name)(seed=3)
    v = dg.get_variable(f"v_{name}", [200, 300], initializer=init)
    with dg.Session() as s:
        s.run(dg.global_variables_initializer())
        got = s.run(v)
    fan_in, fan_out = 200, 300
    scale = {"glorot_uniform": 2 / (fan_in + fan_out), "glorot_normal": 2 / (fan_in + fan_out),
             "he_normal": 2 / fan_in, "lecun_uniform": 1 / fan_in}[name]
    assert abs(got.var() / scale - 1) < 0.05
    assert not hasattr(dg.keras.initializers, "RandomNormal")   # NOTE: Keras's 0.05 default

"""Front-end functions built from the entries that declare them (`Op.front`, ops/api.py):
graph's against tf.compat.v1's functions of the same name, eager's against torch's, on every
sample of the op (the registry's samples: a few per op, so well under a second past the
references' import).
"""
import inspect

import numpy as np
import pytest

from dualgrad import eager, graph, ops
from dualgrad.ops.core import Sample
from tests.opinfo import sample_arrays


def _declaring(front):
    return [op for op in ops.REGISTRY.values() if front in op.front]


def _tf_namespace(front):
    tf = pytest.importorskip("tensorflow").compat.v1
    return tf if front == "tf" else tf.math


@pytest.mark.parametrize("front", ["tf", "tf.math"])
def test_graph_functions_agree_with_tf(front):
    tf_ns = _tf_namespace(front)
    for op in _declaring(front):
        name = op.front[front]
        mine = getattr(graph.math, name)
        assert front == "tf.math" or getattr(graph, name) is mine
        assert list(inspect.signature(mine).parameters) == ["x", "name"]
        for s in op.samples:
            x = sample_arrays(s, np.float32)[0]
            with graph.Session() as sess:
                got = sess.run(mine(x=graph.constant(x), name=name))
            want = getattr(tf_ns, name)(x).numpy()
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, err_msg=name)
            assert got.dtype == want.dtype


def test_eager_functions_agree_with_torch():
    declared = _declaring("torch")
    torch = pytest.importorskip("torch") if declared else None
    for op in declared:
        name = op.front["torch"]
        assert getattr(eager.Tensor, name) and getattr(eager.Tensor, name + "_")
        for s in op.samples:
            args = sample_arrays(s, np.float32)
            got = getattr(eager, name)(*[eager.tensor(a) for a in args]).numpy()
            want = getattr(torch, name)(*[torch.from_numpy(a) for a in args]).numpy()
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, err_msg=name)


def test_a_front_function_takes_the_references_parameter_names():
    op = ops.Op("demo_add", None, None, samples=(Sample(((2,), (2,))),), front=("torch",))
    op.fn = lambda a, b: a + b
    f = ops.api.function(op, "torch")
    assert str(inspect.signature(f)) == "(input, other)" and f.__name__ == "demo_add"
    assert f(1, other=2) == 3
    with pytest.raises(TypeError, match="other"):
        f(1, out=2)


def test_an_unknown_front_is_refused_when_the_op_registers():
    with pytest.raises(ValueError, match="not among"):
        ops.register("demo_front", lambda x: x, lambda x: x, front=("jax",))
    assert "demo_front" not in ops.REGISTRY

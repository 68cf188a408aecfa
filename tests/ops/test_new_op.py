"""Adding an elementwise op touches one file: a registry entry (shape rule, kernel, gradient
rule written with ops, scalar form, ONNX operator) is all eager, graph, the optimiser's
fusion, compile() and ONNX export/import need.

The op here, softsign x / (1 + |x|), is registered by the test itself and removed after it,
so nothing outside this file knows about it.
"""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import compiler, eager, graph, ops
from dualgrad.ops.core import ELEMENTWISE, REGISTRY, Sample, primitive, register

NAME = "test_softsign"
X = np.array([[-50.0, -2.0, -0.5, 0.0], [0.25, 1.0, 3.0, 40.0]], np.float32)


def _value(x):
    return x / (1 + np.abs(x))


def _slope(x):
    return 1 / (1 + np.abs(x)) ** 2


@pytest.fixture
def softsign():
    def vjp(g, x, **kw):
        d = 1 + ops.abs(x)
        return (g / (d * d),)

    op = register(NAME, lambda x, **_: x, lambda x: (x / (1 + np.abs(x))).astype(x.dtype), vjp,
                  scalar="({0} / (1 + abs({0})))", onnx="Softsign",
                  samples=(Sample(((3, 4),)),), ref=lambda np, x: x / (1 + np.abs(x)))
    fn = primitive(op)
    assert NAME in ELEMENTWISE
    yield fn
    del REGISTRY[NAME]
    ELEMENTWISE.discard(NAME)


def test_eager_values_and_gradient(softsign):
    x = eager.tensor(X, requires_grad=True)
    y = softsign(x)
    y.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), _value(X), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), _slope(X), rtol=1e-6)


def _graph(softsign):
    g = graph.Graph()
    with g.as_default():
        p = graph.placeholder(graph.float32, (None, 4), name="x")
        y = softsign(p * 2.0 + 1.0)
        (dx,) = graph.gradients(graph.reduce_sum(y), [p])
    return g, p, y, dx


def test_graph_plain_and_fused(softsign):
    g, p, y, dx = _graph(softsign)
    for optimize in (False, True):
        with graph.Session(g, optimize=optimize) as s:
            got, grad = s.run([y, dx], {p: X})
            report = s.last_report
        np.testing.assert_allclose(got, _value(2 * X + 1), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(grad, 2 * _slope(2 * X + 1), rtol=1e-5, atol=1e-6)
    fused = [{m.op.name for m in n.members} for n in report.program.nodes
             if getattr(n, "members", None)]
    assert any(NAME in m and "mul" in m for m in fused), str(report)


def test_compiled_equals_eager(softsign):
    f = compiler.compile(lambda x: (softsign(x) * x).sum())
    x1, x2 = eager.tensor(X, requires_grad=True), eager.tensor(X, requires_grad=True)
    y1, y2 = f(x1), (softsign(x2) * x2).sum()
    y1.backward()
    y2.backward()
    assert f.traces == 1
    np.testing.assert_allclose(float(y1), float(y2), rtol=1e-6)
    np.testing.assert_allclose(x1.grad.numpy(), x2.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_onnx_export_and_import(softsign, tmp_path):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    g, p, y, _ = _graph(softsign)
    path = graph.onnx.export(tmp_path / "softsign.onnx", inputs=[p], outputs=[y])
    import onnx
    assert "Softsign" in {n.op_type for n in onnx.load(path).graph.node}
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {"x": X})
    np.testing.assert_allclose(got, _value(2 * X + 1), rtol=1e-6, atol=1e-7)
    og = graph.onnx.load(path)
    assert NAME in {n.type for n in og.graph.get_operations()}
    (back,) = og.run({"x": X})
    np.testing.assert_allclose(back, _value(2 * X + 1), rtol=1e-6, atol=1e-7)

"""nn.LayerNorm / F.layer_norm with weight and bias run on one primitive each way
(ops/norm.py): the values and gradients must be torch's, edge rows included; double backward
must work (its rule falls back to differentiable ops when the backward records); compile()
must trace the composite, which the optimiser fuses."""
import numpy as np
import pytest

from dualgrad import compiler, eager, ops
from dualgrad.eager import nn
from dualgrad.eager.nn import functional as F

torch = pytest.importorskip("torch")


def _pair(shape, dtype, seed=0, edge=False):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    w = rng.standard_normal(shape[-1]).astype(dtype)
    b = rng.standard_normal(shape[-1]).astype(dtype)
    if edge:
        x.reshape(-1, shape[-1])[0] = 7.0            # a constant row: variance 0
        x.reshape(-1, shape[-1])[1, 0] = np.inf      # a row holding inf: nan, as torch
        x.reshape(-1, shape[-1])[2, 1] = np.nan
    return x, w, b


@pytest.mark.parametrize("dtype,tol", [(np.float32, 2e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("shape", [(4, 6), (3, 5, 32), (2, 3, 4, 7)], ids=str)
def test_values_and_gradients_are_torchs(shape, dtype, tol):
    x, w, b = _pair(shape, dtype)
    g = np.random.default_rng(9).standard_normal(shape).astype(dtype)
    xs, ws, bs = (eager.tensor(a, requires_grad=True) for a in (x, w, b))
    y = F.layer_norm(xs, (shape[-1],), ws, bs, eps=1e-5)
    assert y._node[0] is ops.REGISTRY["layer_norm_last"]           # the primitive ran
    y.backward(eager.tensor(g))
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    yt = torch.nn.functional.layer_norm(xt, (shape[-1],), wt, bt, eps=1e-5)
    yt.backward(torch.tensor(g))
    for ours, theirs in ((y, yt), (xs.grad, xt.grad), (ws.grad, wt.grad), (bs.grad, bt.grad)):
        assert ours.dtype == dtype
        np.testing.assert_allclose(ours.numpy() if not ours.requires_grad else
                                   ours.detach().numpy(), theirs.detach().numpy(),
                                   rtol=tol, atol=tol * 10)


def test_edge_rows_and_an_empty_batch_behave_as_torch():
    x, w, b = _pair((5, 8), np.float32, edge=True)
    ours = nn.LayerNorm(8)
    ours.weight.data, ours.bias.data = eager.tensor(w), eager.tensor(b)
    theirs = torch.nn.LayerNorm(8)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(w))
        theirs.bias.copy_(torch.tensor(b))
    np.testing.assert_allclose(ours(eager.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    empty = ours(eager.zeros(0, 8, requires_grad=True))
    assert empty.shape == (0, 8)
    empty.sum().backward()
    assert ours.weight.grad.shape == (8,) and not ours.weight.grad.numpy().any()


def test_double_backward_matches_torch():
    """A gradient penalty through LayerNorm: d/dw of |d(loss)/dx|^2."""
    x, w, b = _pair((4, 6), np.float64)
    xs, ws, bs = (eager.tensor(a, requires_grad=True) for a in (x, w, b))
    loss = (F.layer_norm(xs, (6,), ws, bs) ** 3).sum()
    (gx,) = eager.autograd.grad(loss, [xs], create_graph=True)
    (gx * gx).sum().backward()
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    losst = (torch.nn.functional.layer_norm(xt, (6,), wt, bt) ** 3).sum()
    (gxt,) = torch.autograd.grad(losst, [xt], create_graph=True)
    (gxt * gxt).sum().backward()
    np.testing.assert_allclose(gx.detach().numpy(), gxt.detach().numpy(), rtol=1e-10)
    for ours, theirs in ((xs, xt), (ws, wt), (bs, bt)):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_compile_traces_the_composite():
    ln = nn.LayerNorm(16)
    f = compiler.compile(lambda x: ln(x).sum())
    x = eager.randn(4, 16, requires_grad=True)
    out = f(x)
    out.backward()
    ops_in_graph = {getattr(n.op, "name", None) for n in f.graph.get_operations()}
    assert "layer_norm_last" not in ops_in_graph and "sqrt" in ops_in_graph
    x2 = eager.tensor(x.detach().numpy(), requires_grad=True)
    ln(x2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_float16_stays_float16_as_torch():
    x, w, b = (a.astype(np.float16) for a in _pair((3, 8), np.float32))
    xs, ws, bs = (eager.tensor(a, requires_grad=True) for a in (x, w, b))
    y = F.layer_norm(xs, (8,), ws, bs)
    y.sum().backward()
    assert y.dtype == np.float16 and xs.grad.dtype == np.float16 and ws.grad.dtype == np.float16
    want = torch.nn.functional.layer_norm(torch.tensor(x, dtype=torch.float32), (8,),
                                          torch.tensor(w, dtype=torch.float32),
                                          torch.tensor(b, dtype=torch.float32))
    np.testing.assert_allclose(y.detach().numpy().astype(np.float32), want.numpy(), atol=2e-2)

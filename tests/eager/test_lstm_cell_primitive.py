"""nn.LSTMCell on the `lstm_cell_c` / `lstm_cell_h` primitives (ops/lstm.py): the same values
as the composite they replace, torch's values and gradients over several steps (double
backward too), and compile() tracing their composite so the optimiser fuses it."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import eager, ops
from dualgrad.eager import nn
from dualgrad.ops.lstm import _c_composite, _h_composite

from tests.eager._compare import eager_and_compiled

RNG = np.random.default_rng(7)


def _randn(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_primitives_give_the_composites_values_and_gradients_bit_for_bit(dtype):
    z, c, w = _randn(32, 256, scale=3.0), _randn(32, 64), _randn(32, 64)
    got = []
    for cell_c, cell_h in ((ops.lstm_cell_c, ops.lstm_cell_h), (_c_composite, _h_composite)):
        zt = eager.tensor(z.astype(dtype), requires_grad=True)
        ct = eager.tensor(c.astype(dtype), requires_grad=True)
        c2 = cell_c(zt, ct)
        h2 = cell_h(zt, c2)
        ((h2 * eager.tensor(w.astype(dtype))).sum() + (c2 * c2).sum()).backward()
        got.append([h2.detach().numpy(), c2.detach().numpy(), zt.grad.numpy(), ct.grad.numpy()])
    for a, b in zip(*got):
        assert a.dtype == dtype
        np.testing.assert_array_equal(a, b)


def _torch_pair(n_in=5, hidden=4):
    torch = pytest.importorskip("torch")
    ours, theirs = nn.LSTMCell(n_in, hidden), torch.nn.LSTMCell(n_in, hidden)
    with torch.no_grad():
        for name, p in ours.named_parameters():
            getattr(theirs, name).copy_(torch.from_numpy(p.detach().numpy().copy()))
    return torch, ours, theirs


def _run(cell, xs, h, c, tensor, w):
    for x in xs:
        h, c = cell(tensor(x), (h, c))
    return (h * tensor(w)).sum() + (c * c).sum(), h, c


def test_lstm_cell_over_steps_matches_torch_values_and_gradients():
    torch, ours, theirs = _torch_pair()
    xs, h0, c0, w = _randn(6, 3, 5), _randn(3, 4), _randn(3, 4), _randn(3, 4)
    hs, cs = eager.tensor(h0, requires_grad=True), eager.tensor(c0, requires_grad=True)
    ht, ct = torch.tensor(h0, requires_grad=True), torch.tensor(c0, requires_grad=True)
    loss, h, c = _run(ours, xs, hs, cs, eager.tensor, w)
    tloss, th, tc = _run(theirs, xs, ht, ct, torch.from_numpy, w)
    np.testing.assert_allclose(h.detach().numpy(), th.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c.detach().numpy(), tc.detach().numpy(), rtol=1e-5, atol=1e-6)
    loss.backward()
    tloss.backward()
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), getattr(theirs, name).grad.numpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=name)
    np.testing.assert_allclose(hs.grad.numpy(), ht.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(cs.grad.numpy(), ct.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_unbatched_input_and_no_state_as_torch():
    torch, ours, theirs = _torch_pair()
    x = _randn(5)
    h, c = ours(eager.tensor(x))
    th, tc = theirs(torch.from_numpy(x))
    assert tuple(h.shape) == tuple(th.shape) == (4,)
    np.testing.assert_allclose(c.detach().numpy(), tc.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.detach().numpy(), th.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_double_backward_through_the_cell_matches_torch():
    """A gradient penalty: W's gradient of L + |dL/dx|^2, through lstm_cell_*_grad's own
    rules."""
    torch, ours, theirs = _torch_pair()
    xs, h0, c0, w = _randn(3, 3, 5), _randn(3, 4), _randn(3, 4), _randn(3, 4)
    x = eager.tensor(xs[0], requires_grad=True)
    xt = torch.tensor(xs[0], requires_grad=True)
    loss, _, _ = _run(ours, [x] + list(xs[1:]), eager.tensor(h0), eager.tensor(c0),
                      lambda a: a if isinstance(a, eager.Tensor) else eager.tensor(a), w)
    tloss, _, _ = _run(theirs, [xt] + list(xs[1:]), torch.from_numpy(h0),
                       torch.from_numpy(c0),
                       lambda a: a if isinstance(a, torch.Tensor) else torch.from_numpy(a), w)
    loss.backward(create_graph=True)
    tloss.backward(create_graph=True)
    gx, gxt = x.grad, xt.grad
    np.testing.assert_allclose(gx.detach().numpy(), gxt.detach().numpy(), rtol=1e-4, atol=1e-5)
    (gx * gx).sum().backward()
    (gxt * gxt).sum().backward()
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.detach().numpy(),
                                   getattr(theirs, name).grad.detach().numpy(), rtol=1e-3, atol=1e-5, err_msg=name)


def test_state_of_another_batch_is_a_shape_error():
    cell = nn.LSTMCell(5, 4)
    with pytest.raises(ops.ShapeError, match=r"lstm_cell_c: gates \(3, 16\) must be the state "
                                             r"\(2, 4\)"):
        cell(eager.tensor(_randn(3, 5)), (eager.tensor(_randn(3, 4)),
                                          eager.tensor(_randn(2, 4))))


def test_compile_traces_the_composite_and_matches_eager():
    cell = nn.LSTMCell(5, 4)
    xs, w = _randn(4, 3, 5), _randn(3, 4)

    def loss_fn(xs):
        h, c = cell(xs[0])
        for t in range(1, 4):
            h, c = cell(xs[t], (h, c))
        return (h * eager.tensor(w)).sum() + (c * c).sum()

    got, compiled = eager_and_compiled(loss_fn, cell, xs)
    names = [n.op.name for n in compiled.graph.get_operations()]
    assert not set(names) & {"lstm_cell_c", "lstm_cell_h", "lstm_cell_c_grad"}, names
    # NOTE: the two composites share one sigmoid over the gates per step (and one gradient)
    assert names.count("sigmoid") == names.count("sigmoid_grad") == 4
    assert names.count("tanh") == 8 and names.count("transpose") > 8
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

"""BatchNorm1d/2d against NumPy written from torch's formulas (and torch itself when
importable), AvgPool2d, the NLL / BCE losses and LogSoftmax as modules."""
import numpy as np
import pytest

from dualgrad import eager
from dualgrad.eager import nn
from dualgrad.eager.nn import functional as F
from dualgrad.ops import ShapeError

RNG = np.random.default_rng(0)


def _bn_np(x, rm, rv, w, b, training, momentum=0.1, eps=1e-5):
    """torch's batch norm: returns (y, new running_mean, new running_var)."""
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if training:
        n = x.size // x.shape[1]
        mu, var = x.mean(axis=axes), x.var(axis=axes)
        rm = (1 - momentum) * rm + momentum * mu
        rv = (1 - momentum) * rv + momentum * var * n / (n - 1)
    else:
        mu, var = rm, rv
    y = (x - mu.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    return y * w.reshape(shape) + b.reshape(shape), rm, rv


@pytest.mark.parametrize("cls,shape", [(nn.BatchNorm1d, (8, 3)), (nn.BatchNorm1d, (4, 3, 5)),
                                       (nn.BatchNorm2d, (4, 3, 5, 5))])
def test_batchnorm_train_then_eval_matches_torch_formulas(cls, shape):
    bn = cls(3)
    bn.weight.data[...] = [1.5, 0.5, -1.0]
    bn.bias.data[...] = [0.1, 0.2, 0.3]
    w, b = bn.weight.data.numpy().astype(np.float64), bn.bias.data.numpy().astype(np.float64)
    rm, rv = np.zeros(3), np.ones(3)
    for _ in range(3):
        x = RNG.normal(2.0, 3.0, shape).astype(np.float32)
        y = bn(eager.tensor(x))
        want, rm, rv = _bn_np(x.astype(np.float64), rm, rv, w, b, training=True)
        np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(bn.running_mean.numpy(), rm, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(bn.running_var.numpy(), rv, rtol=1e-5, atol=1e-6)
    assert int(bn.num_batches_tracked.numpy()) == 3
    bn.eval()
    x = RNG.normal(size=shape).astype(np.float32)
    y = bn(eager.tensor(x))
    want, rm2, rv2 = _bn_np(x.astype(np.float64), rm, rv, w, b, training=False)
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(bn.running_mean.numpy(), rm)     # eval leaves them alone
    assert int(bn.num_batches_tracked.numpy()) == 3


def test_batchnorm_matches_torch_outputs_grads_and_buffers():
    torch = pytest.importorskip("torch")
    ours, theirs = nn.BatchNorm2d(3, momentum=0.2), torch.nn.BatchNorm2d(3, momentum=0.2)
    for step in range(2):
        x = RNG.normal(1.0, 2.0, (4, 3, 3, 3)).astype(np.float32)
        xt = eager.tensor(x, requires_grad=True)
        tt = torch.tensor(x, requires_grad=True)
        y, yt = ours(xt), theirs(tt)
        (y * y).sum().backward()
        (yt * yt).sum().backward()
        np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(xt.grad.numpy(), tt.grad.numpy(), rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(),
                                   rtol=1e-3, atol=1e-3)
    for k, v in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[k].numpy(), v.numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=k)
    ours.eval()
    theirs.eval()
    x = RNG.normal(size=(2, 3, 3, 3)).astype(np.float32)
    np.testing.assert_allclose(ours(eager.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_batchnorm_state_dict_and_options():
    bn = nn.BatchNorm1d(4)
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                     "num_batches_tracked"]
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias"]
    plain = nn.BatchNorm1d(4, affine=False, track_running_stats=False).eval()
    x = RNG.normal(size=(6, 4)).astype(np.float32)
    y = plain(eager.tensor(x)).detach().numpy()     # no running stats: batch statistics even in eval
    np.testing.assert_allclose(y, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-4,
                               atol=1e-5)
    assert list(plain.state_dict()) == []


def test_batchnorm_errors():
    with pytest.raises(ShapeError, match=r"BatchNorm2d: expected 4-d input .* got \(4, 3\)"):
        nn.BatchNorm2d(3)(eager.ones(4, 3))
    with pytest.raises(ShapeError, match=r"batch_norm: weight \(3,\) must have shape \(5,\)"):
        nn.BatchNorm1d(3)(eager.ones(4, 5))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(3)(eager.ones(1, 3))


def test_avg_pool2d_module():
    x = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    y = nn.AvgPool2d(2)(eager.tensor(x)).numpy()
    np.testing.assert_allclose(y, x.reshape(1, 2, 2, 2, 2, 2).mean(axis=(3, 5)))
    assert nn.AvgPool2d(3, 1)(eager.tensor(x)).shape == (1, 2, 2, 2)


def test_losses_as_modules_match_torch():
    torch = pytest.importorskip("torch")
    logits = RNG.normal(size=(5, 4)).astype(np.float32)
    t = np.array([0, 3, 1, 1, 2])
    lp = nn.LogSoftmax(dim=1)(eager.tensor(logits))
    lpt = torch.nn.LogSoftmax(dim=1)(torch.tensor(logits))
    np.testing.assert_allclose(lp.detach().numpy(), lpt.numpy(), rtol=1e-5, atol=1e-6)
    for red in ("mean", "sum", "none"):
        np.testing.assert_allclose(nn.NLLLoss(reduction=red)(lp, t).numpy(),
                                   torch.nn.NLLLoss(reduction=red)(lpt, torch.tensor(t)).numpy(),
                                   rtol=1e-5, atol=1e-6)
    x = RNG.normal(0, 20, size=(5, 4)).astype(np.float32)   # large |x|: the stable form
    y = RNG.uniform(size=(5, 4)).astype(np.float32)
    np.testing.assert_allclose(
        nn.BCEWithLogitsLoss()(eager.tensor(x), eager.tensor(y)).numpy(),
        torch.nn.BCEWithLogitsLoss()(torch.tensor(x), torch.tensor(y)).numpy(), rtol=1e-5)
    p = RNG.uniform(0.01, 0.99, size=(5, 4)).astype(np.float32)
    np.testing.assert_allclose(
        F.binary_cross_entropy(eager.tensor(p), eager.tensor(y)).numpy(),
        torch.nn.functional.binary_cross_entropy(torch.tensor(p), torch.tensor(y)).numpy(),
        rtol=1e-5)
    with np.errstate(divide="ignore"):    # log(0) clamped at -100, as torch
        clamped = nn.BCELoss(reduction="none")(eager.tensor(np.float32([0.0, 1.0])),
                                               eager.tensor(np.float32([1.0, 0.0])))
    np.testing.assert_allclose(clamped.numpy(), [100, 100])


def test_loss_shape_errors_name_the_function_and_line():
    with pytest.raises(ShapeError, match=r"binary_cross_entropy_with_logits: target \(4, 1\) "
                                         r"must have the shape of input \(4, 3\) \(at .*"
                                         r"test_nn_more.py:\d+\)"):
        F.binary_cross_entropy_with_logits(eager.ones(4, 3), eager.ones(4, 1))
    with pytest.raises(ShapeError, match=r"nll_loss: target \(4, 2\) must have shape \(4,\)"):
        nn.NLLLoss()(eager.ones(4, 3), np.zeros((4, 2), np.int64))

"""F.fold / nn.Fold / nn.Unfold and F.gumbel_softmax against torch (they were missing: an
AttributeError without a reason)."""
import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from dualgrad import compiler, eager  # noqa: E402

F = eager.nn.functional


def _geometries():
    """Every combination of these, with the block count the output size gives."""
    for (h, w), k, s, p, d in itertools.product([(4, 4), (5, 7)], [1, 2, (2, 3)], [1, 2, (2, 1)],
                                               [0, 1], [1, 2]):
        kh, kw = (k, k) if isinstance(k, int) else k
        sh, sw = (s, s) if isinstance(s, int) else s
        ho = (h + 2 * p - d * (kh - 1) - 1) // sh + 1
        wo = (w + 2 * p - d * (kw - 1) - 1) // sw + 1
        if ho >= 1 and wo >= 1:
            yield (h, w), k, s, p, d, ho * wo, kh * kw


GEOMETRIES = list(_geometries())


@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("size,k,s,p,d,blocks,kk", GEOMETRIES,
                         ids=[f"{g[0]}-k{g[1]}-s{g[2]}-p{g[3]}-d{g[4]}" for g in GEOMETRIES])
def test_fold_values_and_gradient_as_torch(size, k, s, p, d, blocks, kk, batched):
    rng = np.random.default_rng(blocks * 7 + kk)
    shape = ((2,) if batched else ()) + (3 * kk, blocks)
    x = rng.standard_normal(shape)
    outs = []
    for lib in (torch, eager):
        t = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.fold(t, size, k, dilation=d, padding=p, stride=s)
        w = np.linspace(-1, 1, int(np.prod(tuple(y.shape)))).reshape(tuple(y.shape))
        (y * lib.tensor(w)).sum().backward()
        outs.append((y.detach().numpy(), t.grad.numpy(), str(y.dtype).split(".")[-1]))
    np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=1e-12, atol=1e-12)
    assert outs[1][2] == outs[0][2]


@pytest.mark.parametrize("shape,size,k", [((2, 5, 4), (3, 3), 2), ((1, 12, 5), (3, 3), 2),
                                          ((12,), (3, 3), 2), ((1, 1, 12, 4), (3, 3), 2)])
def test_fold_refuses_what_torch_refuses_with_its_message(shape, size, k):
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.functional.fold(torch.ones(shape), size, k)
    with pytest.raises(RuntimeError) as ours:
        F.fold(eager.ones(shape), size, k)
    assert str(ours.value) == str(theirs.value).split("\n")[0]


def test_fold_and_unfold_modules_as_torch():
    x = np.arange(2 * 3 * 5 * 5, dtype=np.float32).reshape(2, 3, 5, 5)
    for lib in (torch, eager):
        unfold = lib.nn.Unfold(kernel_size=2, stride=1, padding=1)
        fold = lib.nn.Fold(output_size=(5, 5), kernel_size=2, stride=1, padding=1)
        out = fold(unfold(lib.tensor(x))).numpy()
        if lib is torch:
            expected, reprs = out, (repr(unfold), repr(fold))
    np.testing.assert_array_equal(out, expected)
    assert (repr(unfold), repr(fold)) == reprs


def test_fold_compiles_to_eager_values():
    x = eager.randn(2, 8, 9)
    step = compiler.compile(lambda t: F.fold(t, (4, 4), 2, stride=1) * 2.0)
    np.testing.assert_array_equal(step(x).numpy(), (F.fold(x, (4, 4), 2) * 2.0).numpy())


def test_gumbel_softmax_samples_as_torch_defines_them():
    logits = eager.tensor([[0.0, 1.0, 2.0], [3.0, -1.0, 0.5]], requires_grad=True)
    eager.manual_seed(3)
    soft = F.gumbel_softmax(logits, tau=0.5)
    eager.manual_seed(3)
    again = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_array_equal(soft.detach().numpy(), again.detach().numpy())
    assert not np.array_equal(F.gumbel_softmax(logits).detach().numpy(),
                              F.gumbel_softmax(logits).detach().numpy())   # new draws per call
    np.testing.assert_allclose(soft.sum(-1).detach().numpy(), 1.0, rtol=1e-6)
    eager.manual_seed(3)
    hard = F.gumbel_softmax(logits, tau=0.5, hard=True)
    onehot = hard.detach().numpy()
    assert set(np.unique(onehot)) <= {0.0, 1.0} and (onehot.sum(-1) == 1).all()
    assert (onehot.argmax(-1) == soft.detach().numpy().argmax(-1)).all()
    w = eager.tensor([[1.0, 2.0, 3.0], [0.5, 0.0, -1.0]])
    (hard * w).sum().backward()
    grad_hard = logits.grad.numpy().copy()
    logits.grad = None
    (soft * w).sum().backward()                        # straight through: soft's gradient
    np.testing.assert_allclose(grad_hard, logits.grad.numpy(), rtol=1e-6, atol=1e-7)
    assert F.gumbel_softmax(eager.zeros(4, 5, 6), dim=1).shape == (4, 5, 6)

"""The nn modules, keyword arguments and functional forms added for public PyTorch programs
(CNNs, GANs, autoencoders, transformers), each against torch itself: values and gradients."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import eager
from dualgrad.eager import nn
from dualgrad.eager.nn import functional as F

torch = pytest.importorskip("torch")


def _pair(*shape, seed=0, low=None):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32) if low is None else \
        rng.uniform(low, 1.0, shape).astype(np.float32)
    return eager.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


def _close(a, b, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=rtol,
                               atol=atol)


def _agree(ours_fn, ref_fn, *shapes, rtol=1e-4, atol=1e-5, low=None):
    """Same output and same input gradients (of a random weighting of the output)."""
    pairs = [_pair(*s, seed=i, low=low) for i, s in enumerate(shapes)]
    out, ref = ours_fn(*[p[0] for p in pairs]), ref_fn(*[p[1] for p in pairs])
    _close(out, ref, rtol, atol)
    w = np.random.default_rng(99).standard_normal(tuple(ref.shape)).astype(np.float32)
    (out * eager.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    for (x, tx) in pairs:
        _close(x.grad, tx.grad, rtol, atol)


def _module_pair(name, *args, **kw):
    ref = getattr(torch.nn, name)(*args, **kw)
    ours = getattr(nn, name)(*args, **kw)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
    ours.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    return ours, ref


MODULES = [
    ("Conv2d", (4, 6, 3), dict(stride=2, padding=1, dilation=2, groups=2), (2, 4, 9, 9)),
    ("Conv2d", (3, 4, (3, 1)), dict(stride=(2, 1), padding=(1, 0), bias=False), (2, 3, 7, 5)),
    ("Conv2d", (3, 3, 3), dict(padding="same", groups=3), (1, 3, 6, 6)),
    ("Conv2d", (2, 3, 4), dict(padding="same", dilation=1), (1, 2, 7, 7)),
    ("Conv1d", (4, 6, 3), dict(stride=2, padding=1, groups=2), (2, 4, 11)),
    ("Conv1d", (3, 5, 5), dict(padding="same", dilation=2), (2, 3, 9)),
    ("ConvTranspose2d", (4, 6, 4), dict(stride=2, padding=1), (2, 4, 5, 5)),
    ("ConvTranspose2d", (4, 6, 3), dict(stride=(2, 1), padding=(1, 0), output_padding=(1, 0),
                                        groups=2, dilation=(1, 2), bias=False), (1, 4, 3, 4)),
    ("ConvTranspose1d", (3, 2, 3), dict(stride=2, output_padding=1), (2, 3, 6)),
    ("MaxPool2d", (3,), dict(stride=2, padding=1, ceil_mode=True), (2, 3, 8, 7)),
    ("MaxPool2d", ((2, 3),), dict(stride=(1, 2), dilation=(2, 1)), (1, 2, 7, 8)),
    ("MaxPool1d", (3,), dict(stride=2, ceil_mode=True), (2, 3, 10)),
    ("AvgPool2d", (3,), dict(stride=2, padding=1), (2, 3, 8, 7)),
    ("AvgPool2d", (3,), dict(stride=2, padding=1, ceil_mode=True, count_include_pad=False),
     (2, 3, 8, 7)),
    ("AvgPool2d", (2,), dict(ceil_mode=True, divisor_override=3), (1, 2, 5, 5)),
    ("AvgPool1d", (3,), dict(stride=2, padding=1), (2, 3, 10)),
    ("AdaptiveAvgPool2d", (1,), {}, (2, 3, 5, 7)),
    ("AdaptiveAvgPool2d", ((3, 4),), {}, (2, 3, 7, 9)),
    ("AdaptiveAvgPool2d", ((None, 2),), {}, (1, 2, 5, 5)),
    ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 10)),
    ("AdaptiveMaxPool2d", ((3, 2),), {}, (2, 3, 7, 5)),
    ("AdaptiveMaxPool2d", (2,), {}, (2, 3, 8, 6)),
    ("AdaptiveMaxPool1d", (3,), {}, (2, 3, 8)),
    ("GroupNorm", (2, 6), {}, (3, 6, 4, 2)),
    ("GroupNorm", (3, 6), dict(affine=False), (2, 6, 5)),
    ("InstanceNorm2d", (3,), {}, (2, 3, 4, 5)),
    ("InstanceNorm2d", (3,), dict(affine=True), (2, 3, 4, 5)),
    ("InstanceNorm1d", (3,), {}, (2, 3, 6)),
    ("LayerNorm", (6,), dict(bias=False), (2, 4, 6)),
    ("BatchNorm2d", (3,), dict(bias=False), (4, 3, 2, 2)),
    ("LeakyReLU", (0.2,), {}, (3, 7)),
    ("ReLU6", (), {}, (3, 7)),
    ("ELU", (0.7,), {}, (3, 7)),
    ("SELU", (), {}, (3, 7)),
    ("CELU", (1.5,), {}, (3, 7)),
    ("PReLU", (), {}, (3, 7)),
    ("PReLU", (4,), dict(init=0.1), (2, 4, 3)),
    ("Mish", (), {}, (3, 7)),
    ("Hardtanh", (-0.5, 0.8), {}, (3, 7)),
    ("Hardswish", (), {}, (3, 7)),
    ("Hardsigmoid", (), {}, (3, 7)),
    ("Softsign", (), {}, (3, 7)),
    ("LogSigmoid", (), {}, (3, 7)),
    ("Tanhshrink", (), {}, (3, 7)),
    ("GLU", (), {}, (3, 8)),
    ("Upsample", (), dict(scale_factor=2), (2, 3, 3, 4)),
    ("Upsample", (), dict(size=(5, 7)), (2, 3, 3, 4)),
    ("Upsample", (), dict(scale_factor=2, mode="bilinear"), (1, 2, 3, 4)),
    ("Upsample", (), dict(size=(5, 6), mode="bilinear", align_corners=True), (1, 2, 3, 4)),
    ("Upsample", (), dict(scale_factor=1.5, mode="nearest-exact"), (1, 2, 4, 4)),
    ("Upsample", (), dict(size=7, mode="linear"), (2, 3, 4)),
    ("UpsamplingNearest2d", (), dict(scale_factor=3), (1, 2, 2, 3)),
    ("PixelShuffle", (2,), {}, (2, 8, 3, 4)),
    ("PixelUnshuffle", (2,), {}, (2, 2, 4, 6)),
    ("ZeroPad2d", ((1, 2, 0, 3),), {}, (2, 3, 4, 4)),
    ("ConstantPad2d", (2, 1.5), {}, (2, 3, 4, 4)),
    ("ConstantPad1d", ((1, 2), -1.0), {}, (2, 3, 4)),
    ("Unflatten", (1, (2, 3)), {}, (4, 6, 5)),
]


@pytest.mark.parametrize("name,args,kw,shape", MODULES,
                         ids=[f"{m[0]}-{i}" for i, m in enumerate(MODULES)])
def test_module_matches_torch(name, args, kw, shape):
    ours, ref = _module_pair(name, *args, **kw)
    _agree(ours, ref, shape)
    for (n, p), (_, tp) in zip(ours.named_parameters(), ref.named_parameters()):
        _close(p.grad, tp.grad)


def test_max_pool_return_indices_match_torch():
    x, tx = _pair(2, 3, 7, 8)
    for kw in (dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
               dict(kernel_size=(2, 3), stride=1, dilation=(2, 1))):
        out, idx = F.max_pool2d(x, return_indices=True, **kw)
        tout, tidx = torch.nn.functional.max_pool2d(tx, return_indices=True, **kw)
        _close(out, tout)
        assert idx.dtype == np.int64 and np.array_equal(idx.numpy(), tidx.numpy())
    out, idx = nn.AdaptiveMaxPool2d(2, return_indices=True)(x[:, :, :6])
    tout, tidx = torch.nn.AdaptiveMaxPool2d(2, return_indices=True)(tx[:, :, :6])
    assert np.array_equal(idx.numpy(), tidx.numpy())


@pytest.mark.parametrize("name", ["ReLU", "SiLU", "ReLU6", "ELU", "LeakyReLU", "Hardtanh",
                                  "Hardswish", "Hardsigmoid", "Mish", "SELU", "CELU"])
def test_inplace_activations_write_the_input_and_differentiate(name):
    ours, ref = getattr(nn, name)(inplace=True), getattr(torch.nn, name)(inplace=True)
    x, tx = _pair(3, 5)
    conv_in, tconv_in = x * 2.0, tx * 2.0        # a non-leaf, as after a layer
    out, tout = ours(conv_in), ref(tconv_in)
    assert out is conv_in and tout is tconv_in
    _close(conv_in, tconv_in)
    (out * out).sum().backward()
    (tout * tout).sum().backward()
    _close(x.grad, tx.grad)


def test_relu_inplace_after_a_conv_without_bias_and_after_pooling():
    """DCGAN's discriminator: Conv2d(bias=False) then LeakyReLU(0.2, inplace=True); AlexNet's
    MaxPool2d then ReLU(inplace=True): the conv and pool outputs are views of intermediates."""
    conv, tconv = _module_pair("Conv2d", 3, 4, 4, stride=2, padding=1, bias=False)
    x, tx = _pair(2, 3, 8, 8)
    seq = nn.Sequential(conv, nn.LeakyReLU(0.2, inplace=True), nn.MaxPool2d(2),
                        nn.ReLU(inplace=True))
    tseq = torch.nn.Sequential(tconv, torch.nn.LeakyReLU(0.2, inplace=True),
                               torch.nn.MaxPool2d(2), torch.nn.ReLU(inplace=True))
    _agree(seq, tseq, (2, 3, 8, 8))


def test_inplace_on_a_view_the_user_holds_rebases_the_base_as_torch():
    x0 = np.random.default_rng(0).standard_normal((2, 6))
    got = []
    for lib, fn in ((eager, F), (torch, torch.nn.functional)):
        x = lib.tensor(x0, requires_grad=True)
        base = x * 2
        view = base.reshape(3, 4)
        fn.relu(view, inplace=True)
        (base * base).sum().backward()
        got.append((base.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(got[0][0], got[1][0])
    np.testing.assert_allclose(got[0][1], got[1][1])


def test_dropout_inplace_and_dropout2d_zero_whole_channels():
    eager.manual_seed(0)
    x = eager.ones(4, 6, 3, 3)
    y = F.dropout2d(x, 0.5, training=True)
    per_channel = y.numpy().reshape(4, 6, -1)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert (per_channel.min(-1) == per_channel.max(-1)).all()
    assert F.dropout2d(x, 0.5, training=False) is x
    z = eager.ones(50, 40)
    out = nn.Dropout(0.3, inplace=True)(z)
    kept = z.numpy()[z.numpy() != 0]
    assert out is z and np.allclose(kept, 1 / 0.7)
    assert 0 < (z.numpy() == 0).mean() < 0.6


def test_embedding_padding_idx_and_options_match_torch():
    ref = torch.nn.Embedding(10, 4, padding_idx=2)
    ours = nn.Embedding(10, 4, padding_idx=2)
    assert np.all(ours.weight.detach().numpy()[2] == 0)
    ours.load_state_dict({"weight": ref.weight.detach().numpy()})
    idx = [[1, 2, 3], [2, 2, 9]]
    out, tout = ours(eager.tensor(idx)), ref(torch.tensor(idx))
    _close(out, tout)
    out.pow(2).sum().backward()
    tout.pow(2).sum().backward()
    _close(ours.weight.grad, ref.weight.grad)
    assert np.all(ours.weight.grad.numpy()[2] == 0)
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    frozen = nn.Embedding.from_pretrained(eager.tensor(w))
    assert not frozen.weight.requires_grad and np.array_equal(frozen.weight.detach().numpy(), w)
    assert nn.Embedding(3, 4, _weight=eager.tensor(w)).weight.requires_grad
    g = F.embedding(eager.tensor([0, 1]), eager.tensor(w, requires_grad=True), padding_idx=-3)
    assert g.shape == (2, 4)
    with pytest.raises(NotImplementedError, match="sparse"):
        nn.Embedding(5, 2, sparse=True)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("kw", [dict(max_norm=1.0), dict(max_norm=0.5, norm_type=1.0),
                                dict(scale_grad_by_freq=True),
                                dict(scale_grad_by_freq=True, padding_idx=0, max_norm=1.0)])
def test_embedding_max_norm_and_scale_grad_by_freq_match_torch(kw, dtype):
    """max_norm renormalises the picked rows of weight itself (in its dtype, as torch's
    embedding_renorm_); scale_grad_by_freq divides each row's gradient by its count."""
    w = np.random.default_rng(0).standard_normal((6, 5))
    idx = np.array([[0, 1, 1], [3, 0, 1]])
    tw = torch.tensor(w).to(getattr(torch, dtype)).requires_grad_()
    ew = eager.tensor(w).to(getattr(eager, dtype)).requires_grad_()
    tout = torch.nn.functional.embedding(torch.tensor(idx), tw, **kw)
    out = F.embedding(eager.tensor(idx), ew, **kw)
    g = np.random.default_rng(1).standard_normal(tuple(tout.shape))
    tout.backward(torch.tensor(g).to(tout.dtype))
    out.backward(eager.tensor(g).to(out.dtype))
    for ours, ref in ((out, tout), (ew, tw), (ew.grad, tw.grad)):
        assert str(ours.dtype) == str(ref.dtype)
        # NOTE: float32's L1 / L2 norms are sums whose order is each library's own (SIMD
        # lanes): an ulp apart on some CPUs; the half dtypes round that away
        np.testing.assert_allclose(ours.detach().float().numpy(), ref.detach().float().numpy(),
                                   rtol=3e-7 if dtype == "float32" else 0, atol=0)
    module = nn.Embedding(6, 5, _weight=eager.tensor(w), **kw)
    module(eager.tensor(idx))
    if "max_norm" in kw:
        assert np.abs(module.weight.detach().numpy() - w).max() > 0.1   # renormalised in place


def test_embedding_bag_scale_grad_by_freq_is_embeddings_and_max_mode_refuses_it():
    """Each row's gradient divided by its count, as embedding's (torch's CPU embedding_bag
    divides the k-th distinct index's by the k-th smallest index's count instead)."""
    w = np.random.default_rng(0).standard_normal((6, 3))
    idx = eager.tensor([[2, 2, 5], [3, 2, 1]])
    bag_w, emb_w = eager.tensor(w, requires_grad=True), eager.tensor(w, requires_grad=True)
    bag = F.embedding_bag(idx, bag_w, mode="sum", scale_grad_by_freq=True, max_norm=2.0)
    emb = F.embedding(idx, emb_w, scale_grad_by_freq=True, max_norm=2.0).sum(1)
    np.testing.assert_allclose(bag.detach().numpy(), emb.detach().numpy(), rtol=1e-12)
    (bag * eager.tensor([[1.0, 2, 3], [4, 5, 6]])).sum().backward()
    (emb * eager.tensor([[1.0, 2, 3], [4, 5, 6]])).sum().backward()
    np.testing.assert_allclose(bag_w.grad.numpy(), emb_w.grad.numpy(), rtol=1e-12)
    assert bag_w.grad[5, 0].item() == 1.0 and bag_w.grad[2, 0].item() == 2.0   # (1+1+4) / 3
    with pytest.raises(ValueError, match="max mode does not support scaling"):
        F.embedding_bag(idx, bag_w, mode="max", scale_grad_by_freq=True)


LOSSES = [
    ("L1Loss", {}, {}), ("L1Loss", dict(reduction="sum"), {}),
    ("SmoothL1Loss", dict(beta=0.5), {}), ("SmoothL1Loss", dict(beta=0.0), {}),
    ("HuberLoss", dict(delta=0.7), {}), ("HuberLoss", dict(reduction="none"), {}),
    ("MSELoss", dict(reduction="sum"), {}),
    ("KLDivLoss", dict(reduction="batchmean"), dict(prob_target=True)),
    ("KLDivLoss", dict(reduction="sum", log_target=True), {}),
    ("BCELoss", dict(weight="w"), dict(prob=True)),
    ("BCEWithLogitsLoss", dict(weight="w", pos_weight="pw"), {}),
    ("BCEWithLogitsLoss", dict(pos_weight="pw", reduction="none"), {}),
]


@pytest.mark.parametrize("name,kw,how", LOSSES, ids=[f"{c[0]}-{i}" for i, c in
                                                      enumerate(LOSSES)])
def test_loss_modules_match_torch(name, kw, how):
    rng = np.random.default_rng(3)
    shape = (4, 5)
    t = rng.uniform(0.05, 1, shape).astype(np.float32)
    if how.get("prob_target"):
        t = t / t.sum(-1, keepdims=True)
    consts = {"w": rng.uniform(0.2, 2, shape).astype(np.float32),
              "pw": rng.uniform(0.5, 3, shape[-1:]).astype(np.float32)}
    ours = getattr(nn, name)(**{k: eager.tensor(consts[v]) if v in consts else v
                                for k, v in kw.items()})
    ref = getattr(torch.nn, name)(**{k: torch.tensor(consts[v]) if v in consts else v
                                     for k, v in kw.items()})
    low = 0.05 if how.get("prob") else None
    _agree(lambda x: ours(x, eager.tensor(t)), lambda x: ref(x, torch.tensor(t)), shape,
           low=low)


@pytest.mark.parametrize("fn", ["mse_loss", "l1_loss", "huber_loss"])
def test_weighted_elementwise_losses_match_torch(fn):
    t = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
    w = np.random.default_rng(6).uniform(0.1, 2, (3, 4)).astype(np.float32)
    for red in ("mean", "sum", "none"):
        _agree(lambda x: getattr(F, fn)(x, eager.tensor(t), reduction=red,
                                        weight=eager.tensor(w)),
               lambda x: getattr(torch.nn.functional, fn)(x, torch.tensor(t), reduction=red,
                                                           weight=torch.tensor(w)), (3, 4))


_LEGACY_LOSSES = {    # loss -> (input, target) makers: values in each loss's domain
    "mse_loss": lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 4))),
    "l1_loss": lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 4))),
    "smooth_l1_loss": lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 4))),
    "binary_cross_entropy": lambda r: (r.uniform(0.1, 0.9, (3, 4)), r.uniform(0, 1, (3, 4))),
    "binary_cross_entropy_with_logits": lambda r: (r.standard_normal((3, 4)),
                                                   r.uniform(0, 1, (3, 4))),
    "kl_div": lambda r: (np.log(r.uniform(0.1, 1, (3, 4))), r.uniform(0.1, 1, (3, 4))),
    "nll_loss": lambda r: (np.log(r.uniform(0.1, 1, (3, 4))), r.integers(0, 4, 3)),
    "cross_entropy": lambda r: (r.standard_normal((3, 4)), r.integers(0, 4, 3)),
    "soft_margin_loss": lambda r: (r.standard_normal((3, 4)), np.sign(r.standard_normal((3, 4)))),
    "poisson_nll_loss": lambda r: (r.standard_normal((3, 4)), r.uniform(0, 3, (3, 4))),
    "multilabel_soft_margin_loss": lambda r: (r.standard_normal((3, 4)),
                                              r.integers(0, 2, (3, 4)).astype(float)),
    "hinge_embedding_loss": lambda r: (r.standard_normal((3, 4)),
                                       np.sign(r.standard_normal((3, 4)))),
    "multi_margin_loss": lambda r: (r.standard_normal((3, 4)), r.integers(0, 4, 3)),
}
_LEGACY = [dict(size_average=False), dict(size_average=True), dict(reduce=False),
           dict(reduce=True), dict(size_average=False, reduce=True),
           dict(size_average=True, reduce=False)]


@pytest.mark.parametrize("kw", _LEGACY, ids=str)
@pytest.mark.parametrize("fn", sorted(_LEGACY_LOSSES))
def test_deprecated_size_average_and_reduce_as_torch(fn, kw):
    """torch's deprecated size_average / reduce mean a reduction (mean, sum or none), with its
    warning: the same values and warning here, in the functional and the module form."""
    import warnings
    x, t = _LEGACY_LOSSES[fn](np.random.default_rng(0))
    dt_t = np.int64 if t.dtype.kind == "i" else np.float32
    got = []
    for lib in (torch, eager):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = getattr(lib.nn.functional, fn)(lib.tensor(x.astype(np.float32)),
                                                 lib.tensor(t.astype(dt_t)), **kw)
        got.append((np.asarray(out.tolist()), sorted({str(m.message) for m in w})))
    np.testing.assert_allclose(got[1][0], got[0][0], rtol=1e-5, atol=1e-6)
    assert got[1][1] == got[0][1]


@pytest.mark.parametrize("cls", ["MSELoss", "L1Loss", "BCELoss", "BCEWithLogitsLoss",
                                 "SmoothL1Loss", "KLDivLoss", "NLLLoss", "CrossEntropyLoss"])
def test_deprecated_size_average_and_reduce_of_modules_as_torch(cls):
    for kw in _LEGACY:
        with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
            ours = getattr(nn, cls)(**kw)
        assert ours.reduction == getattr(torch.nn, cls)(**kw).reduction


FUNCTIONAL = [
    ("normalize", dict(p=2.0, dim=1), [(4, 5)]),
    ("normalize", dict(p=1.0, dim=-1), [(2, 3, 4)]),
    ("cosine_similarity", dict(dim=1), [(4, 5), (4, 5)]),
    ("cosine_similarity", dict(dim=-1), [(2, 3, 4), (1, 3, 4)]),
    ("cosine_similarity", dict(dim=-2), [(1, 2, 3), (2, 1, 3)]),    # norms of the broadcast
    ("max_pool1d", dict(kernel_size=2, padding=1), [(3, 7)]),        # unbatched (C, L)
    ("max_pool2d", dict(kernel_size=2, stride=1), [(3, 5, 6)]),      # unbatched (C, H, W)
    ("avg_pool2d", dict(kernel_size=2, ceil_mode=True), [(3, 5, 5)]),
    ("pairwise_distance", dict(), [(4, 5), (4, 5)]),
    ("pairwise_distance", dict(p=1.0, keepdim=True), [(4, 5), (4, 5)]),
    ("glu", dict(dim=1), [(3, 6, 2)]),
    ("logsigmoid", dict(), [(3, 4)]),
    ("softsign", dict(), [(3, 4)]),
    ("leaky_relu", dict(negative_slope=0.3), [(3, 4)]),
    ("elu", dict(alpha=0.5), [(3, 4)]),
    ("hardtanh", dict(min_val=-0.3, max_val=0.4), [(3, 4)]),
    ("softmax", dict(dim=1, dtype=torch.float64), [(3, 4)]),
    ("log_softmax", dict(dim=0), [(3, 4)]),
    ("group_norm", dict(num_groups=2), [(2, 4, 3)]),
    ("interpolate", dict(scale_factor=(2, 3), mode="nearest"), [(1, 2, 3, 3)]),
    ("interpolate", dict(size=(4, 5), mode="bilinear", align_corners=False), [(1, 2, 3, 3)]),
    ("pixel_shuffle", dict(upscale_factor=3), [(1, 9, 2, 2)]),
    ("adaptive_avg_pool2d", dict(output_size=(2, 3)), [(2, 3, 5, 7)]),
    ("dropout", dict(p=0.4, training=False), [(3, 4)]),
    ("unfold", dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=2), [(2, 3, 6, 7)]),
]


@pytest.mark.parametrize("fn,kw,shapes", FUNCTIONAL, ids=[f"{c[0]}-{i}" for i, c in
                                                          enumerate(FUNCTIONAL)])
def test_functional_matches_torch(fn, kw, shapes):
    ours_kw = {k: (np.float64 if v is torch.float64 else v) for k, v in kw.items()}
    _agree(lambda *xs: getattr(F, fn)(*xs, **ours_kw),
           lambda *xs: getattr(torch.nn.functional, fn)(*xs, **kw), *shapes)


def test_prelu_and_conv_functional_forms_match_torch():
    w, tw = _pair(6, 2, 3, 3, seed=4)
    _agree(lambda x: F.conv2d(x, w, None, 1, "same", 1, 2),
           lambda x: torch.nn.functional.conv2d(x, tw, None, 1, "same", 1, 2), (2, 4, 5, 5))
    w, tw = _pair(4, 3, 2, 2, seed=5)
    _agree(lambda x: F.conv_transpose2d(x, w, stride=2),
           lambda x: torch.nn.functional.conv_transpose2d(x, tw, stride=2), (2, 4, 3, 3))
    _close(w.grad, tw.grad)


def test_prelu_of_one_weight_keeps_the_input_shape_as_torch():
    for shape in ((), (5,), (2, 3, 4)):
        _agree(lambda x, w: F.prelu(x, w), torch.nn.functional.prelu, shape, (1,))
        assert F.prelu(eager.ones(*shape), eager.ones(1)).shape == shape
    with pytest.raises(ValueError, match="Not allow zero-dim input tensor"):
        F.prelu(eager.tensor(1.0), eager.ones(2))


def test_pooling_indices_never_point_into_padding_as_torch():
    # NOTE: an integer window of its dtype's minimum tied with the padding (which took that
    # value) and could win; torch's scan starts at the window's first inside position
    x = np.zeros((1, 2, 5, 6), np.uint8)
    x[0, 1, 2, 3] = 7
    for kw in (dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
               dict(kernel_size=(3, 2), stride=(2, 1), padding=1, dilation=(1, 2))):
        _, idx = F.max_pool2d(eager.tensor(x), return_indices=True, **kw)
        _, tidx = torch.nn.functional.max_pool2d(torch.tensor(x), return_indices=True, **kw)
        assert np.array_equal(idx.numpy(), tidx.numpy())
    x3 = np.zeros((1, 1, 4, 5, 5), np.uint8)
    _, idx = F.max_pool3d(eager.tensor(x3), 3, 2, 1, return_indices=True)
    _, tidx = torch.nn.functional.max_pool3d(torch.tensor(x3), 3, 2, 1, return_indices=True)
    assert np.array_equal(idx.numpy(), tidx.numpy())
    # a later nan wins the window, as in torch (and as max_pool's gradient picks it)
    xn = np.array([[[[np.nan, 1.0, np.nan, 2.0], [1.0, 2.0, 3.0, np.nan]]]], np.float32)
    _, idx = F.max_pool2d(eager.tensor(xn), (2, 4), return_indices=True)
    _, tidx = torch.nn.functional.max_pool2d(torch.tensor(xn), (2, 4), return_indices=True)
    assert np.array_equal(idx.numpy(), tidx.numpy())


def test_integer_avg_pool2d_with_a_negative_divisor_truncates_as_torch():
    x = np.arange(-8, 8).reshape(1, 1, 4, 4) * 3
    for d in (-2, 3, -7):
        out = F.avg_pool2d(eager.tensor(x), 2, divisor_override=d)
        ref = torch.nn.functional.avg_pool2d(torch.tensor(x), 2, divisor_override=d)
        assert out.dtype == np.int64 and np.array_equal(out.numpy(), ref.numpy())


def test_native_group_norm_of_an_empty_batch():
    x, w, b = eager.zeros(0, 4), eager.ones(4), eager.zeros(4)
    out = eager.native_group_norm(x, w, b, 0, 4, 1, 2, 1e-5)
    ref = torch.native_group_norm(torch.zeros(0, 4), torch.ones(4), torch.zeros(4), 0, 4, 1, 2,
                                  1e-5)
    assert [tuple(o.shape) for o in out] == [tuple(r.shape) for r in ref]


def test_transformer_encoder_matches_torch_in_both_layouts():
    for kw, shape in ((dict(batch_first=True, activation="gelu"), (2, 5, 8)),
                      (dict(norm_first=True), (5, 2, 8)),
                      (dict(batch_first=True, dim_feedforward=12, bias=False), (3, 4, 8))):
        ref = torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(8, 2, dropout=0.0, **{"dim_feedforward": 16,
                                                                   **kw}),
            num_layers=2, norm=torch.nn.LayerNorm(8), enable_nested_tensor=False)
        ours = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(8, 2, dropout=0.0, **{"dim_feedforward": 16, **kw}),
            num_layers=2, norm=nn.LayerNorm(8))
        assert list(ours.state_dict()) == list(ref.state_dict())
        ours.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
        n, s = (shape[0], shape[1]) if kw.get("batch_first") else (shape[1], shape[0])
        pad = np.zeros((n, s), bool)
        pad[0, -2:] = True
        causal = np.triu(np.full((s, s), -np.inf, np.float32), 1)
        _agree(lambda x: ours(x, mask=eager.tensor(causal),
                              src_key_padding_mask=eager.tensor(pad)),
               lambda x: ref(x, mask=torch.tensor(causal),
                             src_key_padding_mask=torch.tensor(pad)), shape)
        for (name, p), (_, tp) in zip(ours.named_parameters(), ref.named_parameters()):
            _close(p.grad, tp.grad, rtol=1e-3, atol=1e-4)


def test_rnn_cell_and_cells_without_bias_match_torch():
    for name, kw in (("RNNCell", dict(nonlinearity="relu")), ("RNNCell", dict(bias=False)),
                     ("GRUCell", dict(bias=False)), ("LSTMCell", dict(bias=False))):
        ours, ref = _module_pair(name, 4, 5, **kw)
        x, tx = _pair(3, 4)
        out, tout = ours(x), ref(tx)
        out, tout = (out[0], tout[0]) if name == "LSTMCell" else (out, tout)
        _close(out, tout)
        out.sum().backward()
        tout.sum().backward()
        _close(x.grad, tx.grad)


def test_a_transposed_convolution_refuses_padding_modes_as_torch():
    # NOTE: Conv padding modes are provided (test_module_repr_padding.py); a transposed
    # convolution refuses them with torch's ValueError
    with pytest.raises(ValueError, match='Only "zeros" padding mode'):
        nn.ConvTranspose2d(2, 2, 3, padding_mode="circular")


@pytest.mark.parametrize("compiled", [False, True])
def test_batch_norm_momentum_none_is_a_cumulative_average_as_torch(compiled):
    """BatchNorm(momentum=None): the running statistics are the plain average over the
    batches seen (momentum 1 / num_batches_tracked), as torch's (it raised)."""
    from dualgrad import compiler
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((8, 3, 2, 2)).astype(np.float32) * (i + 1) + i
               for i in range(4)]
    ours, theirs = nn.BatchNorm2d(3, momentum=None), torch.nn.BatchNorm2d(3, momentum=None)
    step = compiler.compile(lambda x: ours(x)) if compiled else ours
    for x in batches:
        out, ref = step(eager.tensor(x)), theirs(torch.tensor(x))
        _close(out, ref)
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(ours, name).numpy(), getattr(theirs, name).numpy(),
                                   rtol=1e-6)
    assert int(ours.num_batches_tracked) == 4
    ours.eval()
    theirs.eval()
    _close(ours(eager.tensor(batches[0])), theirs(torch.tensor(batches[0])))


def test_unimplemented_call_options_raise():
    x = eager.randn(1, 2, 4, 4)
    with pytest.raises(NotImplementedError, match="bilinear.*not implemented for 'Short'"):
        # torch: uint8 only
        F.interpolate(x.to(eager.int16), scale_factor=2, mode="bilinear")
    with pytest.raises(NotImplementedError, match="output_size"):
        nn.ConvTranspose2d(2, 2, 3, stride=2)(x, output_size=(9, 9))


@pytest.mark.parametrize("momentum", [0.1, None])
def test_instance_norm_tracks_running_statistics_as_torch(momentum):
    ours, ref = _module_pair("InstanceNorm2d", 3, track_running_stats=True, affine=True,
                             momentum=momentum)
    for seed in range(3):
        x, tx = _pair(2, 3, 4, 5, seed=seed)
        _close(ours(x), ref(tx))
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        _close(getattr(ours, name), getattr(ref, name))
    ours.eval(), ref.eval()
    x, tx = _pair(2, 3, 4, 5, seed=9)
    out, tout = ours(x), ref(tx)
    _close(out, tout)
    out.sum().backward(), tout.sum().backward()
    _close(x.grad, tx.grad)


def test_a_torchvision_style_cnn_and_dcgan_generator_train():
    """A small ResNet-ish classifier and a DCGAN generator, as public scripts write them."""
    eager.manual_seed(0)
    cnn = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
        nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
        nn.Conv2d(8, 8, 3, padding=1, groups=2), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Dropout(0.2), nn.Linear(8, 2))
    gen = nn.Sequential(nn.ConvTranspose2d(4, 8, 4, 1, 0, bias=False), nn.BatchNorm2d(8),
                        nn.ReLU(True), nn.ConvTranspose2d(8, 1, 4, 2, 1, bias=False), nn.Tanh())
    opt = eager.optim.Adam(list(cnn.parameters()) + list(gen.parameters()), lr=0.01)
    z = eager.randn(16, 4, 1, 1)
    y = eager.tensor(np.arange(16) % 2)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        images = gen(z)
        assert images.shape == (16, 1, 8, 8)
        loss = F.cross_entropy(cnn(images), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.parametrize("fn", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
@pytest.mark.parametrize("shapes", [((4, 1), (4,)), ((3,), (2, 3)), ((2, 1, 3), (4, 1))])
def test_pointwise_losses_broadcast_with_a_warning_as_torch(fn, shapes):
    """Input and target of different shapes broadcast (the (N, 1) against (N,) bug) with a
    UserWarning, in torch and here: values and the input's gradient as torch's."""
    r = np.random.default_rng(0)
    x, t = (r.standard_normal(s).astype(np.float32) for s in shapes)
    grads = []
    for lib in (torch, eager):
        xi = lib.tensor(x, requires_grad=True)
        with pytest.warns(UserWarning):
            out = getattr(lib.nn.functional, fn)(xi, lib.tensor(t))
        out.backward()
        grads.append((float(out), xi.grad.numpy()))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-5)
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-5, atol=1e-7)

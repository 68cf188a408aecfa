"""bfloat16, CPU autocast and GradScaler against real torch, as users write them.

No generated matrix: fixed small cases. The autocast table runs every function dualgrad marks
(`eager.amp.LOWER`, `eager.amp.FP32`) once on a (4, 4)-sized input; the training program is a
conv + linear model for 4 steps; op_db's bfloat16 samples are tests/eager/test_opdb.py's.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from dualgrad import compiler, eager
from dualgrad.eager import amp

torch = pytest.importorskip("torch")

BF16 = dict(rtol=1.6e-2, atol=1e-2)        # torch.testing's bfloat16 tolerances


def _np(t):
    return t.detach().float().numpy().astype(np.float64)


def _same(ours, ref, **tol):
    assert str(ours.dtype) == str(ref.dtype), (ours.dtype, ref.dtype)
    np.testing.assert_allclose(_np(ours), _np(ref), **(tol or BF16))


# -- bfloat16, the dtype ------------------------------------------------------------------------
def test_bfloat16_promotes_as_torch():
    others = ["bool", "uint8", "int8", "int64", "float16", "float32", "float64"]
    for lib in (torch, eager):
        assert lib.bfloat16 is not None
    for name in others:
        a, b = eager.ones(2, dtype=eager.bfloat16), eager.ones(2, dtype=getattr(eager, name if name != "bool" else "bool_"))
        ra, rb = torch.ones(2, dtype=torch.bfloat16), torch.ones(2, dtype=getattr(torch, name))
        assert str((a + b).dtype) == str((ra + rb).dtype), name
        assert str((b * a).dtype) == str((rb * ra).dtype), name
    x, rx = eager.ones(2, dtype=eager.bfloat16), torch.ones(2, dtype=torch.bfloat16)
    for other in (2, 2.5, True):
        assert str((x * other).dtype) == str((rx * other).dtype)
    zero_d = eager.tensor(3.0, dtype=eager.float64)
    assert (x * zero_d).dtype == eager.bfloat16 == eager.result_type(x, zero_d)


def test_bfloat16_tensor_api_as_torch():
    vals = [1.5, -2.25, 3.3333, 1e-3]
    x, rx = eager.tensor(vals, dtype=eager.bfloat16), torch.tensor(vals, dtype=torch.bfloat16)
    assert x.tolist() == rx.tolist() and x[0].item() == rx[0].item()
    assert x.is_floating_point() and x.type() == rx.type() == "torch.BFloat16Tensor"
    assert x.float().tolist() == rx.float().tolist()
    assert eager.tensor(vals).bfloat16().tolist() == torch.tensor(vals).bfloat16().tolist()
    assert eager.tensor(vals).to(eager.bfloat16).dtype == eager.bfloat16
    assert "bfloat16" in repr(x) and "3.3281" in repr(x)
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        rx.numpy()
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        x.numpy()
    for lib in (torch, eager):
        net = lib.nn.Linear(3, 2).bfloat16()
        assert net.weight.dtype == net(lib.ones(1, 3).bfloat16()).dtype == lib.bfloat16
    fi, rfi = eager.finfo(eager.bfloat16), torch.finfo(torch.bfloat16)
    assert (fi.eps, fi.max, fi.tiny, fi.bits) == (rfi.eps, rfi.max, rfi.tiny, rfi.bits)


def test_bfloat16_reductions_accumulate_in_float32_as_torch():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 300)).astype(np.float32)
    x, rx = eager.tensor(a).bfloat16(), torch.tensor(a).bfloat16()
    for f in (lambda t: t.sum(), lambda t: t.mean(1), lambda t: t.cumsum(1),
              lambda t: t.softmax(-1), lambda t: t @ t.T, lambda t: t.var(0)):
        _same(f(x), f(rx))


def test_bfloat16_gradients_as_torch():
    a = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    x = eager.tensor(a, dtype=eager.bfloat16, requires_grad=True)
    rx = torch.tensor(a, dtype=torch.bfloat16, requires_grad=True)
    for t in (x, rx):
        (t.tanh() * t).sum().backward()
    _same(x.grad, rx.grad)


def test_bfloat16_safetensors_both_ways(tmp_path):
    from safetensors.torch import load_file, save_file
    vals = [1.5, -2.25, 3.3333]
    eager.save({"w": eager.tensor(vals, dtype=eager.bfloat16)}, str(tmp_path / "ours.safetensors"))
    theirs = load_file(str(tmp_path / "ours.safetensors"))["w"]
    assert theirs.dtype == torch.bfloat16 and theirs.tolist() == torch.tensor(vals).bfloat16().tolist()
    save_file({"w": torch.tensor(vals).bfloat16()}, str(tmp_path / "theirs.safetensors"))
    ours = eager.load(str(tmp_path / "theirs.safetensors"))["w"]
    assert ours.dtype == eager.bfloat16 and ours.tolist() == theirs.tolist()


# -- autocast -----------------------------------------------------------------------------------
def _calls(lib):
    """One call per marked function, on float32 inputs (lib: torch or dualgrad.eager)."""
    F, L = lib.nn.functional, lib.linalg
    g = np.random.default_rng(1)
    t = lambda *s: lib.tensor(g.standard_normal(s).astype(np.float32))   # noqa: E731
    x, y, b3, v = t(4, 4), t(4, 4), t(2, 4, 4), t(4)
    spd = lib.tensor(np.eye(4, dtype=np.float32) * 4) + x @ x.T * 0.1
    img, seq, tgt = t(1, 2, 5, 5), t(1, 2, 6), lib.tensor([0, 1, 2, 3])
    return {
        "matmul": lambda: lib.matmul(x, y), "Tensor.__matmul__": lambda: x @ y,
        "mm": lambda: lib.mm(x, y), "bmm": lambda: lib.bmm(b3, b3),
        "addmm": lambda: lib.addmm(x, x, y), "baddbmm": lambda: lib.baddbmm(b3, b3, b3),
        "addbmm": lambda: lib.addbmm(x, b3, b3), "einsum": lambda: lib.einsum("ij,jk->ik", x, y),
        "tensordot": lambda: lib.tensordot(x, y, 1), "linalg.vecdot": lambda: L.vecdot(x, y),
        "linalg.multi_dot": lambda: L.multi_dot([x, y, x]),
        "nn.functional.linear": lambda: F.linear(x, y, v),
        "nn.functional.conv1d": lambda: F.conv1d(seq, t(3, 2, 3), t(3)),
        "nn.functional.conv2d": lambda: F.conv2d(img, t(3, 2, 3, 3), t(3)),
        "nn.functional.conv_transpose1d": lambda: F.conv_transpose1d(seq, t(2, 3, 3)),
        "nn.functional.conv_transpose2d": lambda: F.conv_transpose2d(img, t(2, 3, 3, 3)),
        "nn.functional.prelu": lambda: F.prelu(x, lib.tensor([0.25])),
        "nn.functional.scaled_dot_product_attention":
            lambda: F.scaled_dot_product_attention(b3, b3, b3),
        "prod": lambda: lib.prod(x), "cdist": lambda: lib.cdist(x, y),
        "trace": lambda: lib.trace(x), "quantile": lambda: lib.quantile(v, 0.5),
        "nanquantile": lambda: lib.nanquantile(v, 0.5), "inverse": lambda: lib.inverse(spd),
        "pinverse": lambda: lib.pinverse(x), "linalg.qr": lambda: L.qr(x)[1],
        "linalg.svd": lambda: L.svd(x)[1], "linalg.inv": lambda: L.inv(spd),
        "linalg.solve": lambda: L.solve(spd, y), "linalg.eigh": lambda: L.eigh(spd)[0],
        "linalg.cond": lambda: L.cond(spd), "linalg.matrix_rank": lambda: L.matrix_rank(x),
        "nn.functional.pad": lambda: F.pad(img, (1, 1, 1, 1), mode="reflect"),
        "nn.functional.cross_entropy": lambda: F.cross_entropy(x, tgt),
        "nn.functional.nll_loss": lambda: F.nll_loss(F.log_softmax(x, 1), tgt),
        "nn.functional.mse_loss": lambda: F.mse_loss(x, y),
        "nn.functional.l1_loss": lambda: F.l1_loss(x, y),
        "nn.functional.smooth_l1_loss": lambda: F.smooth_l1_loss(x, y),
        "nn.functional.huber_loss": lambda: F.huber_loss(x, y),
        "nn.functional.kl_div": lambda: F.kl_div(F.log_softmax(x, 1), F.softmax(y, 1),
                                                 reduction="batchmean"),
        "nn.functional.binary_cross_entropy":
            lambda: F.binary_cross_entropy(lib.sigmoid(x), lib.sigmoid(y)),
        "nn.functional.binary_cross_entropy_with_logits":
            lambda: F.binary_cross_entropy_with_logits(x, lib.sigmoid(y)),
        "nn.functional.margin_ranking_loss": lambda: F.margin_ranking_loss(v, v * 2, lib.ones(4)),
        "nn.functional.soft_margin_loss": lambda: F.soft_margin_loss(x, y),
        "nn.functional.hinge_embedding_loss": lambda: F.hinge_embedding_loss(x, y),
        "nn.functional.poisson_nll_loss": lambda: F.poisson_nll_loss(x, y.abs()),
        "nn.functional.cosine_embedding_loss":
            lambda: F.cosine_embedding_loss(x, y, lib.ones(4)),
        "nn.functional.triplet_margin_loss": lambda: F.triplet_margin_loss(x, y, x * 2),
        "nn.functional.multi_margin_loss": lambda: F.multi_margin_loss(x, tgt),
        "nn.functional.multilabel_margin_loss":
            lambda: F.multilabel_margin_loss(x, lib.tensor([[1, 2, -1, 0]] * 4)),
        # not listed: they run in their inputs' widest dtype
        "exp of a bfloat16 matmul": lambda: lib.exp(x @ y),
        "add of bfloat16 and float32": lambda: x @ y + y,
        "softmax": lambda: F.softmax(x @ y, -1), "layer_norm": lambda: F.layer_norm(x @ y, (4,)),
        "float64 linear": lambda: F.linear(x.double(), y.double()),
        "circular pad": lambda: F.pad(img, (1, 1, 1, 1), mode="circular"),
    }


def test_autocast_table_is_every_marked_function():
    ours = set(_calls(eager))
    assert set(amp.LOWER) | set(amp.FP32) <= ours
    for name in amp.LOWER + amp.FP32:
        fn = eager.Tensor.__matmul__ if name == "Tensor.__matmul__" else eager
        for part in name.split(".") if fn is eager else ():
            fn = getattr(fn, part)
        if name != "Tensor.__matmul__":
            assert getattr(fn, "__autocast__", None) == ("lower" if name in amp.LOWER else
                                                          "fp32"), name


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_autocast_computes_as_torch(dtype):
    ours, ref = _calls(eager), _calls(torch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with eager.autocast("cpu", dtype=getattr(eager, dtype)), \
                torch.autocast("cpu", dtype=getattr(torch, dtype)):
            for name in ref:
                r, o = ref[name](), ours[name]()
                assert str(o.dtype) == str(r.dtype), name
                if name not in ("linalg.qr", "linalg.svd", "linalg.matrix_rank", "pinverse"):
                    tol = {} if r.dtype != torch.float16 else dict(rtol=1e-3, atol=2e-3)
                    _same(o, r, **tol)


def test_autocast_state_and_names_as_torch():
    assert not eager.is_autocast_enabled("cpu")
    with eager.autocast(device_type="cpu"):
        assert eager.is_autocast_enabled("cpu") and not eager.is_autocast_enabled()
        assert eager.get_autocast_dtype("cpu") == eager.bfloat16
        with eager.autocast("cpu", enabled=False):
            assert not eager.is_autocast_enabled("cpu")
            assert eager.mm(eager.ones(2, 2), eager.ones(2, 2)).dtype == eager.float32
        assert eager.is_autocast_cpu_enabled()
    with eager.cpu.amp.autocast():
        assert eager.mm(eager.ones(2, 2), eager.ones(2, 2)).dtype == eager.bfloat16

    @eager.amp.autocast("cpu")
    def f(a):
        return a @ a
    assert f(eager.ones(2, 2)).dtype == eager.bfloat16 and not eager.is_autocast_enabled("cpu")
    for lib in (torch, eager):      # in-place forms are never autocast
        with lib.autocast("cpu"):
            acc = lib.ones(2, 2)
            acc.addmm_(lib.ones(2, 2), lib.ones(2, 2) * 1.001)
        assert acc.dtype == lib.float32 and abs(acc[0, 0].item() - 3.002) < 1e-6
    for dev in ("cpu", "cuda"):
        assert eager.amp.is_autocast_available(dev) == torch.amp.is_autocast_available(dev)
    with pytest.warns(UserWarning, match="CPU Autocast only supports"):
        with eager.autocast("cpu", dtype=eager.float64):
            assert not eager.is_autocast_enabled("cpu")


def test_autocast_under_compile_is_guarded():
    x, w = eager.randn(2, 3), eager.randn(4, 3, requires_grad=True)
    f = compiler.compile(lambda a, b: eager.nn.functional.linear(a, b))
    assert f(x, w).dtype == eager.float32
    with eager.autocast("cpu"):
        y = f(x, w)
        want = eager.nn.functional.linear(x, w)
    assert y.dtype == want.dtype == eager.bfloat16
    np.testing.assert_array_equal(y.float().detach().numpy(), want.float().detach().numpy())
    y.float().sum().backward()
    got, w.grad = w.grad, None
    want.float().sum().backward()
    assert got.dtype == w.grad.dtype == eager.float32
    np.testing.assert_array_equal(got.numpy(), w.grad.numpy())
    assert f(x, w).dtype == eager.float32 and f.traces == 2


# -- a mixed-precision training loop, step by step ------------------------------------------
def _model(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 3, 3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 4 * 4, 8),
                         nn.ReLU(), nn.Linear(8, 3))


def _train(lib, weights, x, y, compiled=False):
    net = _model(lib)
    net.load_state_dict({k: lib.tensor(v) for k, v in weights.items()})
    opt = lib.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    scaler = lib.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=2)

    def forward(a, b):
        with lib.autocast(device_type="cpu", dtype=lib.bfloat16):
            out = net(a)
            return out, lib.nn.functional.cross_entropy(out, b)
    step_fn = compiler.compile(forward) if compiled else forward
    seen = []
    for step in range(4):
        opt.zero_grad()
        out, loss = step_fn(lib.tensor(x), lib.tensor(y))
        scaler.scale(loss).backward()
        if step == 2:      # an overflow: the step is skipped and the scale backs off
            with lib.no_grad():
                net[0].weight.grad[0, 0, 0, 0] = float("inf")
        scaler.unscale_(opt)
        grad = net[3].weight.grad.clone()
        scaler.step(opt)
        scaler.update()
        seen.append((out, loss, grad, net[3].weight.detach().clone(), scaler.state_dict()))
    return seen


@pytest.mark.parametrize("compiled", [False, True])
def test_amp_training_steps_equal_torch(compiled):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 1, 6, 6)).astype(np.float32)
    y = rng.integers(0, 3, 6)
    torch.manual_seed(0)
    weights = {k: v.detach().numpy().copy() for k, v in _model(torch).state_dict().items()}
    ours, ref = _train(eager, weights, x, y, compiled), _train(torch, weights, x, y)
    for step, (o, r) in enumerate(zip(ours, ref)):
        _same(o[0], r[0])                                   # bfloat16 logits
        _same(o[1], r[1], rtol=1e-2, atol=1e-3)             # float32 loss
        _same(o[2], r[2], rtol=2e-2, atol=2e-3)             # unscaled float32 gradient
        _same(o[3], r[3], rtol=1e-3, atol=1e-4)             # weights after the step
        assert o[4] == r[4], f"step {step}: scaler state {o[4]} != torch's {r[4]}"
    assert [s[4]["scale"] for s in ours] == [256.0, 512.0, 256.0, 256.0]


def test_grad_scaler_refuses_as_torch():
    for lib in (torch, eager):
        w = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([w], lr=0.1)
        scaler = lib.amp.GradScaler("cpu")
        with pytest.raises(AssertionError, match="did not use scaler.scale"):
            scaler.update()
        scaler.scale(w.sum()).backward()
        scaler.unscale_(opt)
        with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
            scaler.unscale_(opt)
        scaler.step(opt)
        with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
            scaler.step(opt)
        scaler.update()
        fresh = lib.amp.GradScaler("cpu")
        fresh.load_state_dict(scaler.state_dict())
        assert fresh.state_dict() == scaler.state_dict()
        assert lib.amp.GradScaler("cpu", enabled=False).state_dict() == {}

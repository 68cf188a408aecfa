"""F.interpolate against torch over a generated matrix: every mode ('nearest', 'nearest-exact',
'linear', 'bilinear', 'bicubic', 'trilinear', 'area') x 3-d/4-d/5-d inputs x size (up, down)
or scale_factor (integer and fractional, up and down) x align_corners (unset, False, True) x
recompute_scale_factor (unset, False, True) x antialias x dtype (float32, float64, uint8,
float16, bfloat16): the output's dtype, shape and values, the input's gradient (floating
dtypes), and torch's error (type and message) wherever torch raises.

One test per (mode, rank, dtype), 105 tests, each looping over its 126 combinations of the
other options on one small input (about 13 000 cases; 20-30 s here): a failure lists every
case that differs. float16 and bfloat16 values are torch's to 1e-3 / 1e-2; their gradients,
which torch's backward kernels sum in the half dtype, to 4e-3 / 3e-2 of the largest."""
import itertools
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from dualgrad import eager  # noqa: E402
from dualgrad.compiler import compile as dg_compile  # noqa: E402

MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
SHAPES = {3: (2, 3, 7), 4: (2, 3, 5, 7), 5: (1, 2, 4, 5, 6)}
SIZES = [("size", "up"), ("size", "down"), ("scale", 2), ("scale", 3.0), ("scale", 0.5),
         ("scale", 1.7), ("scale", 0.6)]
TOL = {"float64": 1e-9, "float32": 1e-4, "uint8": 0, "float16": 1e-3, "bfloat16": 1e-2}
HALF = ("float16", "bfloat16")
# NOTE: torch's backward kernels sum a half gradient in the half dtype, ours in float32
# rounded once: a few of the dtype's units apart
HALF_GRAD = {"float16": 4e-3, "bfloat16": 3e-2}


def _kwargs(mode, spatial, how, align, recompute, antialias):
    kw = {"mode": mode}
    if how[0] == "size":
        kw["size"] = tuple(2 * s + 1 if how[1] == "up" else max(1, s // 2) for s in spatial)
    else:
        kw["scale_factor"] = how[1]
    for name, v in (("align_corners", align), ("recompute_scale_factor", recompute)):
        if v is not None:
            kw[name] = v
    if antialias:
        kw["antialias"] = True
    return kw


def _run(lib, x, dtype, kw):
    """(dtype name, shape, values, input gradient) of interpolate, or the exception."""
    try:
        t = lib.tensor(x).to(getattr(lib, dtype))
        grad = dtype in ("float32", "float64") + HALF
        if grad:
            t.requires_grad_()
        y = lib.nn.functional.interpolate(t, **kw)
        g = None
        if grad:
            w = lib.tensor(np.linspace(-1.0, 2.0, y.numel()).reshape(tuple(y.shape)))
            (y * w.to(y.dtype)).sum().backward()
            g = t.grad.double().numpy()
        return str(y.dtype).replace("torch.", ""), tuple(y.shape), y.detach().double().numpy(), g
    except Exception as e:      # noqa: BLE001 - compared with torch's
        return e


def _differs(x, dtype, kw):
    theirs, ours = _run(torch, x, dtype, kw), _run(eager, x, dtype, kw)
    if isinstance(theirs, Exception) or isinstance(ours, Exception):
        if type(ours) is type(theirs) and str(ours) == str(theirs):
            return None
        return f"raised {theirs!r} / ours {ours!r}"
    if ours[:2] != theirs[:2]:
        return f"dtype, shape {theirs[:2]} / ours {ours[:2]}"
    scale = max(1.0, float(np.abs(theirs[2]).max(initial=0.0)))
    if np.abs(ours[2] - theirs[2]).max(initial=0.0) > TOL[dtype] * scale:
        return f"values differ by {np.abs(ours[2] - theirs[2]).max()}"
    if ours[3] is None:
        return None
    gap = np.abs(ours[3] - theirs[3]).max(initial=0.0)
    if dtype in HALF:
        if gap > HALF_GRAD[dtype] * max(1.0, float(np.abs(theirs[3]).max(initial=0.0))):
            return f"gradient differs by {gap}"
    elif gap > TOL[dtype] * 10:
        return f"gradient differs by {gap}"
    return None


@pytest.mark.parametrize("dtype", ["float32", "float64", "uint8", "float16", "bfloat16"])
@pytest.mark.parametrize("nd", [3, 4, 5])
@pytest.mark.parametrize("mode", MODES)
def test_interpolate_as_torch(mode, nd, dtype):
    rng = np.random.default_rng(nd)
    x = rng.integers(0, 256, SHAPES[nd]) if dtype == "uint8" else rng.standard_normal(SHAPES[nd])
    bad = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for how, align, rec, aa in itertools.product(SIZES, (None, False, True),
                                                     (None, False, True), (False, True)):
            kw = _kwargs(mode, SHAPES[nd][2:], how, align, rec, aa)
            why = _differs(x, dtype, kw)
            if why:
                bad.append(f"{kw}: {why}")
    assert not bad, f"{len(bad)} cases differ:\n" + "\n".join(bad[:20])


ERRORS = [  # (shape, dtype, kwargs): the argument checks and the kernels' refusals
    ((2, 3, 5, 7), "float32", dict(size=(3,), mode="nearest")),
    ((2, 3, 5, 7), "float32", dict(size=(3.0, 4), mode="nearest")),
    ((2, 3, 5, 7), "float32", dict(scale_factor=(2,), mode="bilinear")),
    ((2, 3, 5, 7), "float32", dict(size=3, scale_factor=2, mode="nearest")),
    ((2, 3, 5, 7), "float32", dict(mode="bilinear")),
    ((2, 3, 5, 7), "float32", dict(size=3, mode="foo")),
    ((5, 7), "float32", dict(size=3, mode="nearest")),
    ((2, 3, 5, 7), "float32", dict(scale_factor=0.1, mode="bilinear")),
    ((2, 3, 5, 7), "float32", dict(size=(0, 3), mode="nearest")),
    ((2, 3, 0, 7), "float32", dict(size=(3, 3), mode="bicubic")),
    ((2, 0, 5, 7), "float32", dict(size=(3, 3), mode="nearest-exact")),
    ((2, 3, 0, 7), "float32", dict(size=(3, 3), mode="area")),
    ((2, 3, 5, 7), "int64", dict(size=3, mode="nearest")),
    ((2, 3, 5), "int32", dict(size=3, mode="nearest-exact")),
    ((2, 3, 5, 7), "bool", dict(size=3, mode="bilinear")),
    ((2, 3, 5, 7), "int64", dict(size=3, mode="bicubic")),
    ((2, 3, 5, 7), "uint8", dict(size=3, mode="area")),
    ((2, 3, 5, 4, 3), "uint8", dict(size=3, mode="trilinear")),
    ((2, 3, 5, 7), "float16", dict(size=3, mode="bicubic", antialias=True)),
]


@pytest.mark.parametrize("shape,dtype,kw", ERRORS)
def test_interpolate_errors_as_torch(shape, dtype, kw):
    x = np.zeros(shape)
    theirs, ours = _run(torch, x, dtype, kw), _run(eager, x, dtype, kw)
    assert isinstance(theirs, Exception)
    assert type(ours) is type(theirs) and str(ours) == str(theirs)


def _forward(lib, shape, kw):
    try:
        return tuple(lib.nn.functional.interpolate(lib.zeros(*shape), **kw).shape)
    except Exception as e:      # noqa: BLE001 - compared with torch's
        return type(e), str(e)


@pytest.mark.parametrize("mode", ["area", "bilinear", "nearest"])
@pytest.mark.parametrize("shape,size", [((0, 3, 5, 7), (3, 3)), ((2, 0, 5, 7), (3, 3)),
                                        ((2, 3, 5, 7), (0, 3))])
def test_empty_inputs_and_outputs_as_torch(mode, shape, size):
    kw = dict(size=size, mode=mode)
    assert _forward(eager, shape, kw) == _forward(torch, shape, kw)


@pytest.mark.parametrize("kw", [dict(scale_factor=2, mode="bilinear", align_corners=False),
                                dict(size=(3, 4), mode="bicubic", antialias=True),
                                dict(scale_factor=1.5, mode="nearest-exact"),
                                dict(size=(4, 9), mode="area")])
def test_upsample_module_and_compiled_as_eager(kw):
    x = np.random.default_rng(9).standard_normal((2, 3, 5, 7)).astype(np.float32)
    up = eager.nn.Upsample(**{k: v for k, v in kw.items() if k != "antialias"})
    ref = torch.nn.Upsample(**{k: v for k, v in kw.items() if k != "antialias"})
    assert repr(up) == repr(ref)
    np.testing.assert_allclose(up(eager.tensor(x)).numpy(), ref(torch.tensor(x)).numpy(),
                               rtol=1e-5, atol=1e-5)

    def f(t):
        return eager.nn.functional.interpolate(t, **kw)
    results = []
    for fn in (f, dg_compile(f)):
        t = eager.tensor(x, requires_grad=True)
        y = fn(t)
        (y * y).sum().backward()
        results.append((y.detach().numpy(), t.grad.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)

"""F.grid_sample (4-d and 5-d) and F.affine_grid (2-d and 3-d) against torch, case by case:
values, output dtype and shape, the input's and the grid's gradients, torch's errors and
warnings, and a few cases through compile() against eager.

The matrix is every mode x padding x align_corners x spatial rank (bicubic is 4-d only, as
torch's) in float64 and float32: 30 forms x 2 dtypes, each on one small random input, so the
file runs in a few seconds."""
import itertools
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from dualgrad import eager  # noqa: E402
from dualgrad.compiler import compile as dg_compile  # noqa: E402

MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")
FORMS = [(m, p, a, nd) for m, p, a, nd in itertools.product(MODES, PADDINGS, (False, True),
                                                            (4, 5))
         if not (m == "bicubic" and nd == 5)]
TOL = {"float64": dict(rtol=1e-10, atol=1e-10), "float32": dict(rtol=2e-5, atol=2e-5)}


def _grid(rng, n, out, nd):
    """Points inside and outside [-1, 1], with the edges and pixel centres hit exactly."""
    g = rng.uniform(-1.4, 1.4, (n,) + out + (nd - 2,))
    flat = g.reshape(-1)
    flat[:8] = [-1.0, 1.0, 0.0, -1.0, 1.0, 0.5, -0.5, 1.25]
    return g


def _inputs(nd, seed=0):
    rng = np.random.default_rng(seed)
    shape = (2, 3, 4, 5) if nd == 4 else (2, 2, 3, 4, 5)
    out = (3, 6) if nd == 4 else (2, 3, 4)
    return rng.standard_normal(shape), _grid(rng, 2, out, nd)


def _run(lib, x, g, dtype, **kw):
    xt = lib.tensor(x, dtype=getattr(lib, dtype), requires_grad=True)
    gt = lib.tensor(g, dtype=getattr(lib, dtype), requires_grad=True)
    y = lib.nn.functional.grid_sample(xt, gt, **kw)
    w = lib.tensor(np.linspace(-1.0, 2.0, y.numel()).reshape(tuple(y.shape)),
                   dtype=getattr(lib, dtype))
    (y * w).sum().backward()
    return y, xt.grad, gt.grad


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode,padding,align,nd", FORMS)
def test_grid_sample_as_torch(mode, padding, align, nd, dtype):
    x, g = _inputs(nd)
    kw = dict(mode=mode, padding_mode=padding, align_corners=align)
    theirs, ours = _run(torch, x, g, dtype, **kw), _run(eager, x, g, dtype, **kw)
    assert str(ours[0].dtype) == str(theirs[0].dtype)
    assert tuple(ours[0].shape) == tuple(theirs[0].shape)
    for a, b in zip(ours, theirs):          # the output, the input's and the grid's gradients
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **TOL[dtype])


def test_nearest_grid_gradient_is_zeros_as_torch():
    x, g = _inputs(4)
    for lib in (torch, eager):
        gt = lib.tensor(g, requires_grad=True)
        lib.nn.functional.grid_sample(lib.tensor(x), gt, mode="nearest",
                                      align_corners=False).sum().backward()
        assert gt.grad is not None and not gt.grad.numpy().any()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("mode", MODES)
def test_half_grid_sample_at_least_as_close_as_torch(mode, dtype):
    """torch's CPU kernel computes in the half dtype; ours in float32, rounded once: the
    dtype is torch's and the values at least as close to the float64 result."""
    x, g = _inputs(4, seed=3)
    kw = dict(mode=mode, align_corners=False)
    xt, gt = torch.tensor(x).to(getattr(torch, dtype)), torch.tensor(g).to(getattr(torch, dtype))
    exact = torch.nn.functional.grid_sample(xt.double(), gt.double(), **kw).numpy()
    theirs = torch.nn.functional.grid_sample(xt, gt, **kw)
    ours = eager.nn.functional.grid_sample(
        eager.tensor(xt.float().numpy()).to(getattr(eager, dtype)),
        eager.tensor(gt.float().numpy()).to(getattr(eager, dtype)), **kw)
    assert str(ours.dtype) == str(theirs.dtype)
    err_ours = np.abs(ours.float().numpy() - exact).max()
    assert err_ours <= np.abs(theirs.float().numpy() - exact).max()


def test_non_finite_grid_zeros_padding_as_torch():
    x = np.arange(9.0).reshape(1, 1, 3, 3)
    g = np.array([[[[np.nan, 0.0], [np.inf, 0.0], [-np.inf, 0.2], [1e20, 0.1]]]])
    for mode in ("bilinear", "nearest"):
        outs = [lib.nn.functional.grid_sample(lib.tensor(x), lib.tensor(g), mode=mode,
                                              align_corners=False).numpy()
                for lib in (torch, eager)]
        np.testing.assert_array_equal(outs[1], outs[0])


def test_empty_batch_channels_and_output_as_torch():
    for xs, gs in [((0, 3, 4, 5), (0, 2, 2, 2)), ((2, 0, 4, 5), (2, 2, 2, 2)),
                   ((2, 3, 4, 5), (2, 0, 2, 2)), ((1, 2, 3, 4, 5), (1, 2, 0, 2, 3))]:
        outs = [lib.nn.functional.grid_sample(lib.zeros(*xs), lib.zeros(*gs),
                                              align_corners=True) for lib in (torch, eager)]
        assert tuple(outs[1].shape) == tuple(outs[0].shape)


ERRORS = [  # (input shape, grid shape, kwargs, input dtype, grid dtype)
    ((2, 3, 4, 5), (2, 3, 6, 2), {"mode": "linear"}, "float32", "float32"),
    ((2, 3, 4, 5), (2, 3, 6, 2), {"padding_mode": "circular"}, "float32", "float32"),
    ((2, 3, 4, 5), (3, 3, 6, 2), {}, "float32", "float32"),
    ((2, 3, 4, 5), (3, 6, 2), {}, "float32", "float32"),
    ((2, 3, 4, 5), (2, 3, 6, 3), {}, "float32", "float32"),
    ((2, 3, 0, 5), (2, 3, 6, 2), {}, "float32", "float32"),
    ((2, 3, 4), (2, 6, 1), {}, "float32", "float32"),
    ((1, 2, 3, 4, 5, 6), (1, 2, 2, 2, 3, 4), {}, "float32", "float32"),
    ((1, 2, 3, 4, 5), (1, 2, 2, 2, 3), {"mode": "bicubic"}, "float32", "float32"),
    ((2, 3, 4, 5), (2, 3, 6, 2), {}, "float64", "float32"),
    ((2, 3, 4, 5), (2, 3, 6, 2), {}, "float32", "int64"),
    ((2, 3, 4, 5), (2, 3, 6, 2), {}, "int32", "float32"),
    ((1, 2, 3, 4, 5), (1, 2, 2, 2, 3), {}, "int64", "int64"),
]


@pytest.mark.parametrize("xs,gs,kw,xd,gd", ERRORS)
def test_grid_sample_errors_as_torch(xs, gs, kw, xd, gd):
    raised = []
    for lib in (torch, eager):
        x = lib.zeros(*xs, dtype=getattr(lib, xd))
        g = lib.zeros(*gs, dtype=getattr(lib, gd))
        with pytest.raises(Exception) as info:
            lib.nn.functional.grid_sample(x, g, align_corners=False, **kw)
        raised.append(info.value)
    assert type(raised[1]) is type(raised[0])
    assert str(raised[1]) == str(raised[0])


def test_align_corners_none_warns_as_torch():
    x, g = _inputs(4)
    for fn in ("grid_sample", "affine_grid"):
        caught = []
        for lib in (torch, eager):
            args = (lib.tensor(x), lib.tensor(g)) if fn == "grid_sample" else \
                (lib.zeros(2, 2, 3), (2, 3, 4, 5))
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                getattr(lib.nn.functional, fn)(*args)
            caught.append([(m.category, str(m.message), m.filename) for m in w])
        assert caught[1] == caught[0]
        assert caught[0][0][2] == __file__       # at the caller's line, in both


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5, 6), (1, 1, 1, 3, 2), (2, 2, 3, 1, 1),
                                  (2, 3, 4, 5), (1, 1, 1, 3)])
def test_affine_grid_as_torch(size, align):
    k = len(size) - 2
    theta = np.random.default_rng(1).standard_normal((size[0], k, k + 1))
    outs = []
    for lib in (torch, eager):
        th = lib.tensor(theta, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            grid = lib.nn.functional.affine_grid(th, size, align_corners=align)
        (grid * grid).sum().backward()
        outs.append((grid.detach().numpy(), th.grad.numpy(), [str(m.message) for m in w]))
    assert outs[1][0].shape == outs[0][0].shape
    np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=1e-12, atol=1e-12)
    assert outs[1][2] == outs[0][2]          # the unit-size warning under align_corners


AFFINE_ERRORS = [((2, 3, 4), (1, 3, 4, 5, 6), "float32"), ((2, 2, 3), (1, 3, 4, 5), "float32"),
                 ((2, 2, 3), (2, 3, 4, 5), "int64"), ((2, 2, 3), (2, 3, 0, 5), "float32"),
                 ((2, 2, 3), (2, 3, 4), "float32"), ((2, 3, 4), (2, 3, 4, 5), "float32"),
                 ((2, 2, 3), (2, 3, 4, 5, 6), "float32")]


@pytest.mark.parametrize("ts,size,dt", AFFINE_ERRORS)
def test_affine_grid_errors_as_torch(ts, size, dt):
    raised = []
    for lib in (torch, eager):
        with pytest.raises(Exception) as info:
            lib.nn.functional.affine_grid(lib.zeros(*ts, dtype=getattr(lib, dt)), size,
                                          align_corners=False)
        raised.append(info.value)
    assert type(raised[1]) is type(raised[0])
    assert str(raised[1]) == str(raised[0])


def test_spatial_transformer_round_trip_as_torch():
    """The idiom: affine_grid then grid_sample, gradients reaching theta."""
    rng = np.random.default_rng(5)
    x, theta = rng.standard_normal((2, 3, 6, 7)), rng.standard_normal((2, 2, 3)) * 0.5
    outs = []
    for lib in (torch, eager):
        th = lib.tensor(theta, requires_grad=True)
        grid = lib.nn.functional.affine_grid(th, (2, 3, 5, 4), align_corners=False)
        y = lib.nn.functional.grid_sample(lib.tensor(x), grid, align_corners=False)
        (y * y).sum().backward()
        outs.append((y.detach().numpy(), th.grad.numpy()))
    for a, b in zip(outs[1], outs[0]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("mode,padding,nd", [("bilinear", "zeros", 4),
                                             ("bicubic", "reflection", 4),
                                             ("nearest", "border", 5),
                                             ("bilinear", "reflection", 5)])
def test_compiled_equals_eager(mode, padding, nd):
    x, g = _inputs(nd, seed=7)

    def step(xt, gt):
        return eager.nn.functional.grid_sample(xt, gt, mode=mode, padding_mode=padding,
                                               align_corners=False)
    results = []
    for fn in (step, dg_compile(step)):
        xt = eager.tensor(x, dtype=eager.float32, requires_grad=True)
        gt = eager.tensor(g, dtype=eager.float32, requires_grad=True)
        y = fn(xt, gt)
        (y * y).sum().backward()
        results.append((y.detach().numpy(), xt.grad.numpy(), gt.grad.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)

"""Complex dtypes against torch: creation, the promotion matrix, the views that write through
(`.real`, `.imag`, `view_as_real`, `view_as_complex`), the functions made for complex numbers
and the refusals (an op whose registry entry does not declare complex support raises torch's
NotImplementedError type; complex autograd raises). The per-op statuses of every op_db entry
are tests/eager/test_opdb.py's (tests/eager/opdb_complex.json).

About 2 s here: the promotion matrix is 9 dtypes x 14 operands x 2 ops against torch.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dualgrad import compiler, eager  # noqa: E402
from dualgrad import graph  # noqa: E402
from dualgrad.ops import ComplexError  # noqa: E402

_Z = [1 + 2j, -3 + 0.5j, 0.25 - 1j]


def _np(t):
    return t.detach().resolve_conj().resolve_neg().numpy() if isinstance(t, torch.Tensor) else t.numpy()


def _same(ours, ref, rtol=1e-6, atol=1e-6):
    assert str(ours.dtype) == str(ref.dtype), (ours.dtype, ref.dtype)
    assert tuple(ours.shape) == tuple(ref.shape)
    np.testing.assert_allclose(_np(ours), _np(ref), rtol=rtol, atol=atol)


# -- creation ---------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda m: m.tensor(_Z), lambda m: m.tensor(1j), lambda m: m.as_tensor(_Z),
    lambda m: m.tensor(np.array(_Z)), lambda m: m.tensor(np.array(_Z, np.complex64)),
    lambda m: m.tensor([1, 2.5, 1j]), lambda m: m.tensor(_Z, dtype=m.cdouble),
    lambda m: m.zeros(2, 3, dtype=m.cfloat), lambda m: m.ones(2, dtype=m.complex128),
    lambda m: m.full((2,), 1 + 1j), lambda m: m.full((2,), 2, dtype=m.complex64),
    lambda m: m.eye(2, dtype=m.cfloat), lambda m: m.tensor(_Z).to(m.complex128),
    lambda m: m.tensor([1.0, 2.0]).to(m.cfloat), lambda m: m.arange(3).to(m.cdouble),
])
def test_creation_gives_torchs_dtype_and_values(make):
    _same(make(eager), make(torch))


def test_default_dtype_decides_the_complex_of_python_numbers():
    for dt in (torch.float64, torch.float32):
        torch.set_default_dtype(dt)
        eager.set_default_dtype(eager.float64 if dt == torch.float64 else eager.float32)
        try:
            for make in (lambda m: m.tensor(_Z), lambda m: m.ones(2, dtype=m.int32) * 1j,
                         lambda m: m.tensor([1.0]) * 1j):
                _same(make(eager), make(torch))
        finally:
            torch.set_default_dtype(torch.float32)
            eager.set_default_dtype(eager.float32)


def test_from_numpy_shares_memory():
    a = np.array(_Z, np.complex64)
    t = eager.from_numpy(a)
    a[0] = 5j
    assert t.dtype == eager.complex64 and t[0].item() == 5j


def test_random_complex_draws_have_torchs_law():
    z = eager.randn(20000, dtype=eager.cfloat)
    assert z.dtype == eager.complex64
    power = float((z.abs() ** 2).mean())       # torch: real and imaginary parts N(0, 1/2)
    assert abs(power - 1.0) < 0.05
    assert abs(float(z.real.std()) - 0.5 ** 0.5) < 0.02
    u = eager.rand(20000, dtype=eager.cdouble)
    assert u.dtype == eager.complex128 and 0 <= float(u.imag.min()) and float(u.imag.max()) < 1


def test_names_and_predicates():
    assert eager.cfloat == eager.complex64 and eager.cdouble == eager.complex128
    z = eager.tensor(_Z)
    assert z.is_complex() and eager.is_complex(z) and not z.is_floating_point()
    assert z[1].item() == complex(torch.tensor(_Z)[1].item())
    assert z.tolist() == torch.tensor(_Z).tolist()
    assert not hasattr(eager, "chalf")


# -- promotion --------------------------------------------------------------------------------
_DTYPES = ["bool", "uint8", "int64", "float16", "bfloat16", "float32", "float64", "complex64",
           "complex128"]
_OPERANDS = [("1j", lambda m: 1j), ("2.5", lambda m: 2.5), ("3", lambda m: 3),
             ("(1+1j)", lambda m: 1 + 1j)] + \
    [(f"{d} 0-d", lambda m, d=d: m.tensor(1, dtype=getattr(m, d if d != "bool" else
                                                           ("bool_" if m is eager else "bool"))))
     for d in ("int64", "float64", "complex64", "complex128")] + \
    [(f"{d} 1-d", lambda m, d=d: m.ones(3, dtype=getattr(m, d if d != "bool" else
                                                         ("bool_" if m is eager else "bool"))))
     for d in ("uint8", "float16", "float32", "float64", "complex64", "complex128")]


def _of(m, name, values=(1, 0, 1)):
    dt = getattr(m, name if name != "bool" or m is torch else "bool_")
    return m.tensor(list(values)).to(dt)


@pytest.mark.parametrize("dtype", _DTYPES)
def test_promotion_matrix(dtype):
    """x * other and x + other for every operand kind, as torch: the dtype and the values,
    or, where torch gives complex32 (ComplexHalf, which dualgrad lacks), a clear refusal."""
    for label, other in _OPERANDS:
        for op in (lambda a, b: a * b, lambda a, b: a + b):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")     # torch's ComplexHalf is experimental
                try:
                    ref = op(_of(torch, dtype), other(torch))
                except RuntimeError as e:
                    with pytest.raises(type(e)):
                        op(_of(eager, dtype), other(eager))
                    continue
            if ref.dtype == torch.complex32:
                with pytest.raises(ComplexError, match="complex32"):
                    op(_of(eager, dtype), other(eager))
                continue
            ours = op(_of(eager, dtype), other(eager))
            assert str(ours.dtype) == str(ref.dtype), (dtype, label)
            if ref.dtype.is_complex:
                np.testing.assert_allclose(_np(ours), _np(ref), rtol=1e-3)


def test_result_type_with_complex():
    z, f = eager.tensor(_Z), eager.ones(3, dtype=eager.float64)
    tz, tf_ = torch.tensor(_Z), torch.ones(3, dtype=torch.float64)
    assert repr(eager.result_type(z, f)) == repr(torch.result_type(tz, tf_))
    assert repr(eager.result_type(f, 1j)) == repr(torch.result_type(tf_, 1j))
    assert not eager.can_cast(eager.complex64, eager.float64)


# -- views that write through -------------------------------------------------------------------
@pytest.mark.parametrize("view, write", [
    (lambda m, z: z.real, lambda v: v.add_(10)),
    (lambda m, z: z.imag, lambda v: v.mul_(-2)),
    (lambda m, z: m.real(z), lambda v: v.fill_(0)),
    (lambda m, z: m.view_as_real(z), lambda v: v[1].add_(3)),
    (lambda m, z: m.view_as_real(z)[:, 1], lambda v: v.zero_()),
])
def test_complex_views_write_through(view, write):
    zs = [m.tensor(_Z) for m in (eager, torch)]
    outs = [view(m, z) for m, z in zip((eager, torch), zs)]
    _same(outs[0], outs[1])
    for v in outs:
        write(v)
    _same(zs[0], zs[1])


def test_view_as_complex_writes_through_and_checks():
    xs = [m.arange(12.0).reshape(3, 2, 2) for m in (eager, torch)]
    cs = [m.view_as_complex(x) for m, x in zip((eager, torch), xs)]
    _same(cs[0], cs[1])
    for c in cs:
        c[0].mul_(1j)
    _same(xs[0], xs[1])
    for bad in (lambda m: m.view_as_complex(m.ones(3, 3)),
                lambda m: m.view_as_complex(m.ones(2, 4)[:, ::2].reshape(2, 2)[:, :2].t())):
        with pytest.raises(RuntimeError):
            bad(torch)
        with pytest.raises(RuntimeError):
            bad(eager)


def test_real_of_a_real_tensor_is_itself_and_imag_refuses():
    for m in (eager, torch):
        x = m.tensor([1.0, 2.0])
        x.real.add_(1)
        assert x.tolist() == [2.0, 3.0]
        with pytest.raises(RuntimeError, match="imag is not implemented for tensors with "
                                               "non-complex dtypes"):
            x.imag


# -- the functions made for complex numbers ----------------------------------------------------
@pytest.mark.parametrize("f", [
    lambda m, z, x: m.complex(x, 2 * x), lambda m, z, x: m.complex(x.double(), x.double()),
    lambda m, z, x: m.polar(x.abs(), x), lambda m, z, x: z.abs(), lambda m, z, x: z.angle(),
    lambda m, z, x: m.angle(x), lambda m, z, x: z.conj(), lambda m, z, x: m.conj_physical(z),
    lambda m, z, x: z.conj().imag, lambda m, z, x: z.exp(), lambda m, z, x: z.sum(),
    lambda m, z, x: z.mean(), lambda m, z, x: z * z.conj() / (z + 1), lambda m, z, x: z == z,
    lambda m, z, x: m.vdot(z, z), lambda m, z, x: (z.reshape(3, 1) @ z.reshape(1, 3)).mH,
    lambda m, z, x: z.sqrt(), lambda m, z, x: z ** 2, lambda m, z, x: z.to(m.complex128),
    lambda m, z, x: m.cat([z, z.to(m.complex128)]), lambda m, z, x: m.where(x > 0, z, 0),
    lambda m, z, x: m.sgn(m.cat([z, z * 0])),
])
def test_complex_functions_agree_with_torch(f):
    outs = [f(m, m.tensor(_Z), m.tensor([0.5, -1.5, 2.0])) for m in (eager, torch)]
    _same(outs[0], outs[1], rtol=1e-5)


def test_cast_to_real_warns_as_torch_and_keeps_the_real_part():
    z = eager.tensor(_Z)
    with pytest.warns(UserWarning, match="Casting complex values to real discards the "
                                         "imaginary part"):
        x = z.to(eager.float32)
    assert x.tolist() == torch.tensor(_Z).real.tolist()
    assert eager.tensor([0j, 1j, 1]).bool().tolist() == \
        torch.tensor([0j, 1j, 1]).bool().tolist()      # nonzero, either part


# -- refusals ------------------------------------------------------------------------------------
@pytest.mark.parametrize("f", [
    lambda z: z.sigmoid(), lambda z: z < z, lambda z: z.argmax(), lambda z: z.relu(),
    lambda z: z.max(), lambda z: z.clamp(0, 1), lambda z: z.sort(), lambda z: z.floor(),
    lambda z: z.log_softmax(0), lambda z: z.std(), lambda z: z.norm(), lambda z: z // 2,
    lambda z: eager.nn.functional.gelu(z) if isinstance(z, eager.Tensor) else
    torch.nn.functional.gelu(z),
])
def test_ops_without_complex_support_refuse_with_torchs_error_type(f):
    """Where torch refuses, its error type (NotImplementedError is a RuntimeError); where
    torch computes and dualgrad's entry declares no complex support, NotImplementedError
    naming the dtype as torch does ('ComplexFloat')."""
    try:
        f(torch.tensor(_Z))
        expected = NotImplementedError
    except RuntimeError as e:
        expected = type(e)
    with pytest.raises(expected) as info:
        f(eager.tensor(_Z))
    assert isinstance(info.value, (NotImplementedError, RuntimeError))
    assert "Complex" in str(info.value) or "complex" in str(info.value)


def test_the_refusal_names_the_op_and_the_dtype_in_every_engine():
    with pytest.raises(NotImplementedError, match="\"sigmoid\" not implemented for "
                                                  "'ComplexDouble'"):
        eager.tensor(_Z, dtype=eager.cdouble).sigmoid()
    from dualgrad import ops
    with pytest.raises(ComplexError, match="'ComplexFloat'"):
        ops.REGISTRY["sigmoid"].infer(ops.Spec((3,), np.dtype(np.complex64)))


def test_complex_autograd_refuses():
    with pytest.raises(NotImplementedError, match="does not differentiate complex"):
        eager.tensor(_Z, requires_grad=True)
    with pytest.raises(NotImplementedError, match="does not differentiate complex"):
        eager.tensor(_Z).requires_grad_()
    with pytest.raises(NotImplementedError, match="does not differentiate complex"):
        eager.nn.Parameter(eager.tensor(_Z))
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="does not differentiate complex"):
        x * 1j
    with pytest.raises(NotImplementedError, match="does not differentiate complex"):
        eager.complex(x, x)
    with eager.no_grad():
        assert (x * 1j).dtype == eager.complex64
    assert (x.detach() * 1j).abs().tolist() == [1.0, 2.0]


def test_graph_and_compile_refuse_complex_clearly():
    with pytest.raises(TypeError, match="complex128 is not supported"):
        graph.constant([1 + 2j])
    with pytest.raises(TypeError, match="complex64 is not supported"):
        graph.placeholder(np.complex64, [2])
    p = graph.placeholder(graph.float32, [1])
    with pytest.raises(graph.errors.InvalidArgumentError, match="cannot feed a complex128"):
        graph.Session().run(p * 2, {p: np.array([1j])})
    assert not hasattr(graph, "complex64") and not hasattr(graph, "real")
    with pytest.raises(NotImplementedError, match="compile\\(\\) does not trace complex"):
        compiler.compile(lambda z: z * 2)(eager.tensor(_Z))


# -- torch.fft ------------------------------------------------------------------------------------
_X = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
_C = (_X + 1j * np.random.default_rng(1).standard_normal((4, 6))).astype(np.complex64)


@pytest.mark.parametrize("name, kw", [
    (n, kw) for n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
    for kw in ({}, {"n": 5}, {"n": 8, "dim": 0}, {"norm": "ortho"}, {"norm": "forward"})] + [
    (n, kw) for n in ("fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn",
                      "hfft2", "ihfft2", "hfftn", "ihfftn")
    for kw in ({}, {"s": (3, 8)}, {"dim": (1, 0)}, {"s": (5,), "dim": (0,), "norm": "ortho"},
               {"norm": "forward"})]
)
def test_fft_agrees_with_torch(name, kw):
    """Every transform, its n= / s= / dim= / norm= arguments, on real and complex input
    (the real-input transforms of complex input raise as torch's do)."""
    for data in (_X, _C, _X.astype(np.float64), np.arange(24).reshape(4, 6)):
        try:
            ref = getattr(torch.fft, name)(torch.from_numpy(data), **kw)
        except RuntimeError as e:
            with pytest.raises(type(e)):
                getattr(eager.fft, name)(eager.tensor(data), **kw)
            continue
        ours = getattr(eager.fft, name)(eager.tensor(data), **kw)
        _same(ours, ref, rtol=1e-4, atol=1e-4)


def test_fft_freqs_and_refusals():
    for name in ("fftfreq", "rfftfreq"):
        for args, kw in (((8,), {}), ((5, 0.1), {}), ((6,), {"dtype": "float64"})):
            tkw = {k: getattr(torch, v) for k, v in kw.items()}
            _same(getattr(eager.fft, name)(*args, **kw), getattr(torch.fft, name)(*args, **tkw))
    x = eager.tensor(_X, requires_grad=True)
    with pytest.raises(NotImplementedError, match="no gradients for the Fourier transforms"):
        eager.fft.irfft(x)
    with eager.no_grad():
        assert eager.fft.irfft(x).shape == (4, 10)
    with pytest.raises(RuntimeError, match="Unsupported dtype Half"):
        eager.fft.fft(eager.ones(4, dtype=eager.float16))


def test_save_and_load_complex64_and_refuse_complex128(tmp_path):
    """safetensors stores complex64 ("C64", which torch's safetensors writes too) and no
    complex128: saving one raises naming the tensor."""
    z = eager.tensor(_Z)
    eager.save({"z": z}, tmp_path / "z.pt")
    back = eager.load(tmp_path / "z.pt")["z"]
    assert back.dtype == eager.complex64 and back.tolist() == z.tolist()
    with pytest.raises(TypeError, match="cannot store 'z': dtype complex128"):
        eager.save({"z": z.cdouble()}, tmp_path / "w.pt")

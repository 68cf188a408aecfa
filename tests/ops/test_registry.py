"""Every op's own entry is consistent: shape rule vs kernel, kernel vs reference, error samples."""
import numpy as np
import pytest

from dualgrad import ops
from tests.opinfo import numpy_ref, params


@pytest.mark.parametrize("case", params("ok", lambda c: c.name in ops.REGISTRY))
def test_shape_rule_matches_kernel(case):
    """infer() on the input specs predicts exactly the kernel's output shape and dtype."""
    op = ops.REGISTRY[case.name]
    for dtype in (np.float32, np.float64):
        args = case.args(dtype)
        out = np.asarray(op.kernel(*args, **case.sample.attrs))
        spec = op.infer(*[ops.spec_of(a) for a in args], **case.sample.attrs)
        assert spec.shape == out.shape, f"{case.id}: rule says {spec.shape}, kernel {out.shape}"
        assert spec.dtype == out.dtype, f"{case.id}: rule says {spec.dtype}, kernel {out.dtype}"


@pytest.mark.parametrize("case", params("ok", lambda c: c.name in ops.REGISTRY))
def test_shape_rule_with_unknown_dims(case):
    """With every dim unknown, the rule still runs and keeps the rank (graph placeholders)."""
    op = ops.REGISTRY[case.name]
    args = case.args(np.float32)
    specs = [ops.Spec(tuple(None for _ in a.shape), a.dtype)
             if isinstance(a, np.ndarray) and a.dtype.kind == "f" else ops.spec_of(a)
             for a in args]
    try:
        spec = op.infer(*specs, **case.sample.attrs)
    except ops.ShapeError as e:
        # a rule may need a dim to be known (e.g. squeeze without axis); it must say so
        assert "unknown" in str(e) or case.name in {"reshape", "unfold"}, str(e)
        return
    out = np.asarray(op.kernel(*args, **case.sample.attrs))
    assert len(spec.shape) == out.ndim
    assert all(d is None or d == o for d, o in zip(spec.shape, out.shape))


@pytest.mark.parametrize("case", params("ok"))
def test_forward_matches_numpy_reference(case):
    args = case.args(np.float64)
    expected = numpy_ref(case, args)
    if expected is None:
        pytest.skip("no NumPy reference for this op (covered by its gradient tests)")
    got = np.asarray(case.fn(*args, **case.sample.attrs))
    np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("case", params("error"))
def test_error_samples_raise_shape_error(case):
    args = case.args(np.float32)
    with pytest.raises(ops.ShapeError, match=case.sample.match) as info:
        case.fn(*args, **case.sample.attrs)
    assert str(info.value).startswith(case.name) or case.name in str(info.value)


def test_every_op_has_samples():
    missing = [n for n, op in ops.REGISTRY.items() if not op.samples and not op.stateful]
    assert not missing, f"ops without samples: {missing}"


def test_elementwise_ops_have_scalar_forms_in_the_vocabulary():
    from dualgrad.ops.scalar import check_form
    assert ops.ELEMENTWISE, "no elementwise ops registered"
    for name in ops.ELEMENTWISE:
        op = ops.REGISTRY[name]
        for s in op.samples:
            form = op.scalar_form(s.attrs)
            assert "{0}" in form, name
            check_form(form, len(s.args))


def test_a_scalar_form_outside_the_vocabulary_is_refused_at_registration():
    with pytest.raises(ValueError, match="op 'bad_relu': scalar form 'relu.*unknown function"):
        ops.register("bad_relu", lambda x: x, np.abs, scalar="relu({0})")
    with pytest.raises(ValueError, match="reduce='mean' is not one of"):
        ops.register("bad_mean", lambda x: x, np.mean, reduce="mean")
    assert "bad_relu" not in ops.REGISTRY and "bad_mean" not in ops.REGISTRY


def test_shape_error_names_op_and_every_shape():
    with pytest.raises(ops.ShapeError) as info:
        ops.matmul(np.ones((32, 64)), np.ones((128, 10)))
    assert str(info.value) == ("matmul: cannot multiply (32, 64) by (128, 10): inner "
                               "dimensions 64 != 128")
    assert isinstance(info.value, ValueError)


def test_small_integer_powers_are_multiplications():
    x = np.array([-2.0, -0.5, 3.0], np.float32)
    for k in (0, 1, 2, 3, 4):
        got = ops.pow(x, k)
        np.testing.assert_array_equal(got, x ** k)
        assert got.dtype == np.float32


def test_every_op_with_samples_has_an_independent_reference():
    """A sample without a reference would check the kernel against itself: an entry without
    one must name a PyTorch function (tests/opinfo.py, _torch_fn) that computes it."""
    from tests.opinfo import _torch_fn
    missing = [n for n, op in ops.REGISTRY.items()
               if op.samples and op.ref is None and not op.stateful and _torch_fn(n) is None]
    missing += [n for n, c in ops.COMPOSITES.items() if c.samples and c.ref is None]
    assert not missing, f"ops whose samples have no reference: {missing}"

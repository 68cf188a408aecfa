"""Every op in the eager engine: forward vs NumPy, gradient vs finite differences and vs jax."""
import numpy as np
import pytest

from dualgrad import eager
from dualgrad import ops
from tests.opinfo import jax_ref_fn, numeric_grad, numpy_ref, params


def _eager_args(case, args, requires_grad=True):
    pos = case.float_positions(args)
    return [eager.tensor(a, dtype=a.dtype, requires_grad=requires_grad and i in pos)
            if isinstance(a, np.ndarray) else a for i, a in enumerate(args)], pos


@pytest.mark.parametrize("case", params("ok"))
def test_eager_forward_matches_numpy(case):
    if ops.REGISTRY.get(case.name) is not None and ops.REGISTRY[case.name].stateful:
        pytest.skip("random op")
    for dtype in (np.float32, np.float64):
        args = case.args(dtype)
        targs, _ = _eager_args(case, args, requires_grad=False)
        out = case.fn(*targs, **case.sample.attrs)
        assert isinstance(out, eager.Tensor)
        expected = numpy_ref(case, args)
        assert expected is not None, f"{case.name} has no reference: the kernel would be checked against itself"
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5 if dtype == np.float32
                                   else 1e-7, atol=2e-5 if dtype == np.float32 else 1e-10)
        assert out.dtype == np.asarray(expected).dtype


def _loss_weights(case, args, seed=1):
    out = np.asarray(case.fn(*args, **case.sample.attrs))
    return np.random.default_rng(seed).uniform(0.5, 1.5, out.shape)


@pytest.mark.parametrize("case", params("ok", lambda c: c.differentiable))
def test_eager_gradient_matches_finite_differences(case):
    args = case.args(np.float64)
    w = _loss_weights(case, args)
    targs, pos = _eager_args(case, args)
    out = case.fn(*targs, **case.sample.attrs)
    (out * w).sum().backward()

    def f(*a):
        return float(np.sum(np.asarray(case.fn(*a, **case.sample.attrs)) * w))

    for i in pos:
        expected = numeric_grad(f, [a.copy() if isinstance(a, np.ndarray) else a for a in args], i)
        got = targs[i].grad
        if got is None:   # not differentiable in this input (e.g. the `like` of reshape_like)
            assert not np.any(expected), f"{case.id}: no gradient for input {i}"
            continue
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{case.id}: d/d input {i}")


@pytest.mark.parametrize("case", params("ok", lambda c: c.differentiable))
def test_eager_matches_jax(case):
    """Output and gradient against jax.numpy / jax.grad of the op's reference: an outside oracle."""
    ref = jax_ref_fn(case)
    if ref is None:
        pytest.skip("no reference expression for this op")
    import jax
    import jax.numpy as jnp
    args = case.args(np.float64)
    w = _loss_weights(case, args)
    targs, pos = _eager_args(case, args)
    out = case.fn(*targs, **case.sample.attrs)
    (out * w).sum().backward()

    def forward(*floats):
        full = list(args)
        for i, v in zip(pos, floats):
            full[i] = v
        return ref(*[jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in full])

    def out_and_grads(*floats):
        grads = jax.grad(lambda *f: jnp.sum(forward(*f) * w),
                         argnums=tuple(range(len(pos))))(*floats)
        return forward(*floats), grads

    jargs = [jnp.asarray(args[i]) for i in pos]
    # NOTE: one XLA compilation of the reference and its gradient costs less than the
    # op-by-op dispatch of every jnp call in them (133 -> 44 s over the registry); a
    # reference that branches on values (not traceable) runs op by op
    try:
        expected_out, grads = jax.jit(out_and_grads)(*jargs)
    except jax.errors.JAXTypeError:
        expected_out, grads = out_and_grads(*jargs)
    np.testing.assert_allclose(out.detach().numpy(), np.asarray(expected_out), rtol=1e-7,
                               atol=1e-10)
    for i, g in zip(pos, grads):
        if targs[i].grad is None:
            assert not np.any(np.asarray(g)), f"{case.id}: no gradient for input {i}"
            continue
        np.testing.assert_allclose(targs[i].grad.numpy(), np.asarray(g), rtol=1e-6, atol=1e-9,
                                   err_msg=f"{case.id}: d/d input {i}")


@pytest.mark.parametrize("case", params("error"))
def test_eager_shape_errors_name_op_shapes_and_line(case):
    args = case.args(np.float32)
    targs, _ = _eager_args(case, args, requires_grad=False)
    with pytest.raises(ops.ShapeError, match=case.sample.match) as info:
        case.fn(*targs, **case.sample.attrs)
    msg = str(info.value)
    if case.name in ops.REGISTRY:   # composites raise from their own check, before any kernel
        assert f"{__file__.rsplit('/', 1)[-1]}:" in msg, msg

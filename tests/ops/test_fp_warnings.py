"""No NumPy RuntimeWarning from a kernel on finite inputs: log(0), sqrt(-1), x / 0, exp(100)
in float32 and the like give inf and nan silently, as torch's and TF's kernels do, so a
program run with `-W error` (or pytest's `filterwarnings = error`) behaves as with torch.
Generated over the registry: every op whose kernel takes one or two arrays is called with
zeros, negatives, halves and values whose exp overflows, in float32 and float64; an op that
raises on them is judged by its error elsewhere, not here. ops.core.QUIET_FP is the table of
kernels that need the quiet context."""
import inspect
import warnings

import numpy as np
import pytest

from dualgrad import eager, graph
from dualgrad.compiler import compile
from dualgrad.ops import core

VALUES = [0.0, -0.0, -1.0, 1.0, -2.5, 3.7, 100.0, -100.0, 0.5, 2.0, 1e4]


def _arity(kernel):
    try:
        params = inspect.signature(getattr(kernel, "__wrapped__", kernel)).parameters.values()
    except (TypeError, ValueError):
        return getattr(kernel, "nin", None)
    return len([p for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                                         p.POSITIONAL_OR_KEYWORD)])


OPS = sorted(n for n, op in core.REGISTRY.items()
             if op.kernel is not None and _arity(op.kernel) in (1, 2))


def _warnings(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn(*args)
        except Exception:  # noqa: BLE001 - an op refusing these inputs raises on purpose
            pass
    return [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


@pytest.mark.parametrize("name", OPS)
def test_kernel_is_quiet_on_finite_inputs(name):
    op = core.REGISTRY[name]
    for dt in (np.float32, np.float64):
        v = np.array(VALUES, dt)
        if _arity(op.kernel) == 1:
            got = _warnings(op.kernel, v)
        else:
            x, y = np.meshgrid(v, v)
            got = _warnings(op.kernel, x.ravel(), y.ravel())
        assert not got, f"{name} ({np.dtype(dt)}): {got[0]}"


# each: (the torch call on dualgrad.eager, the TF1 call on dualgrad.graph)
CALLS = {
    "log(0)": (lambda t: t.log(t.zeros(2)), lambda tf: tf.log(tf.zeros([2]))),
    "sqrt(-1)": (lambda t: t.sqrt(-t.ones(2)), lambda tf: tf.sqrt(-tf.ones([2]))),
    "1 / 0": (lambda t: t.ones(2) / t.zeros(2), lambda tf: tf.ones([2]) / tf.zeros([2])),
    "exp(100)": (lambda t: t.exp(t.full((2,), 100.0)), lambda tf: tf.exp(tf.fill([2], 100.0))),
    "0 ** -1": (lambda t: t.zeros(2) ** -1.0, lambda tf: tf.zeros([2]) ** -1.0),
    "log1p(-1)": (lambda t: t.log1p(-t.ones(2)), lambda tf: tf.log1p(-tf.ones([2]))),
    "floordiv by 0": (lambda t: t.ones(2) // t.zeros(2),
                      lambda tf: tf.floordiv(tf.ones([2]), tf.zeros([2]))),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_eager_compile_and_graph_give_inf_and_nan_silently(name):
    torch_call, tf_call = CALLS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        want = torch_call(eager).numpy()
        fast = compile(lambda: torch_call(eager))
        fast()
        np.testing.assert_array_equal(fast().numpy(), want)
        g = graph.Graph()
        with g.as_default(), graph.Session() as s:
            np.testing.assert_array_equal(s.run(tf_call(graph)), want)
    assert not np.isfinite(want).all()


# calls whose inf or nan comes from add, sub or mul (not in QUIET_FP: an inf or nan input, or
# overflow): under warnings-as-errors NumPy's warning is an exception, and dualgrad's eager
# runs the kernel again quietly: the values are torch's, never a KernelError
TORCH_CALLS = {
    "softmax of a masked row": lambda t: t.nn.functional.softmax(
        t.tensor([[float("-inf")] * 3, [0.0, float("-inf"), 1.0]]), dim=-1),
    "log_softmax of a masked row": lambda t: t.nn.functional.log_softmax(
        t.full((2, 3), float("-inf")), dim=1),
    "inf - inf": lambda t: t.tensor([float("inf"), 1.0]) - float("inf"),
    "0 * inf": lambda t: t.tensor([0.0, 2.0]) * float("inf"),
    "kl_div of a zero target": lambda t: t.nn.functional.kl_div(
        t.tensor([float("-inf"), -1.0]), t.tensor([0.0, 0.5]), reduction="none"),
    "gradient through inf * 0": lambda t: _grad_of(t, lambda x: (x * 0.0).sum(),
                                                   [float("inf"), 1.0]),
    "gradient of sqrt at 0": lambda t: _grad_of(t, lambda x: x.sqrt().sum(), [0.0, 4.0]),
}


def _grad_of(t, f, values):
    x = t.tensor(values, requires_grad=True)
    f(x).backward()
    return x.grad


@pytest.mark.parametrize("name", sorted(TORCH_CALLS))
def test_warnings_as_errors_give_torchs_values(name):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = TORCH_CALLS[name](eager).numpy()
    want = TORCH_CALLS[name](torch).numpy()
    np.testing.assert_allclose(got, want, rtol=3e-7, atol=0)   # NOTE: nan where torch's is


def test_var_without_degrees_of_freedom_warns_as_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, eager):
        with pytest.warns(UserWarning, match=r"std\(\): degrees of freedom is <= 0"):
            assert np.isnan(lib.ones(1).std().item())
        with pytest.warns(UserWarning, match=r"var\(\): degrees of freedom is <= 0"):
            assert lib.tensor([1.0, 2.0]).var(correction=3).item() == np.inf

"""Everyday autograd calls, run on torch and on dualgrad.eager and compared: gradients and
their accumulation, backward() twice, non-scalar outputs, autograd.grad (allow_unused,
materialize_grads, create_graph, second derivatives), grad modes (no_grad, set_grad_enabled,
enable_grad inside no_grad, the no_grad decorator, inference_mode), .grad of non-leaves,
retain_grad, hooks, detach sharing storage, in-place on leaves, backward(inputs=), grad_fn
(name, next_functions), is_leaf, autograd.functional. Results are compared as plain data:
tensors by shape, dtype, values and requires_grad
errors by type.
"""
import numpy as np
import pytest
import torch

from dualgrad import eager


def desc(v):
    if v is None:
        return None
    if hasattr(v, "shape") and hasattr(v, "tolist"):
        return ("T", tuple(v.shape), str(v.dtype).replace("torch.", ""),
                np.round(np.asarray(v.tolist(), dtype=float), 5).tolist(), bool(v.requires_grad))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, [desc(x) for x in v])
    return (type(v).__name__, v)


def x(L, rg=True): return L.tensor([1.0, 2.0, 3.0], requires_grad=rg)


def twice(L):
    a = x(L)
    y = (a * a).sum()
    y.backward()
    y.backward()
    return a.grad


def twice_retain(L):
    a = x(L)
    y = (a * a).sum()
    y.backward(retain_graph=True)
    y.backward()
    return a.grad


def nonscalar(L):
    a = x(L)
    (a * 2).backward()
    return a.grad


def grad_unused(L):
    a, b = x(L), x(L)
    return L.autograd.grad((a * 2).sum(), [a, b])


def grad_unused_ok(L):
    a, b = x(L), x(L)
    return L.autograd.grad((a * 2).sum(), [a, b], allow_unused=True)


def grad_unused_zero(L):
    a, b = x(L), x(L)
    return L.autograd.grad((a * 2).sum(), [a, b], allow_unused=True, materialize_grads=True)


def create_graph(L):
    a = x(L)
    g, = L.autograd.grad((a ** 3).sum(), a, create_graph=True)
    return g


def second(L):
    a = x(L)
    g, = L.autograd.grad((a ** 3).sum(), a, create_graph=True)
    g2, = L.autograd.grad(g.sum(), a)
    return g2


def no_grad_rg(L):
    a = x(L)
    with L.no_grad(): b = a * 2
    return b


def set_grad(L):
    a = x(L)
    with L.set_grad_enabled(False): b = a * 2
    return b, L.is_grad_enabled()


def inference(L):
    a = x(L)
    with L.inference_mode(): b = a * 2
    return b, b.is_inference() if hasattr(b, "is_inference") else None


def leaf_grad_nonleaf(L):
    a = x(L)
    b = a * 2
    (b.sum()).backward()
    return b.grad


def grad_of_int(L): return L.tensor([1, 2], requires_grad=True)


def detach_shares(L):
    a = x(L)
    d = a.detach()
    d[0] = 10.0
    return a


def backward_grad_tensor(L):
    a = x(L)
    (a * 2).backward(L.tensor([1.0, 0.5, 0.0]))
    return a.grad


def accumulate(L):
    a = x(L)
    (a * 2).sum().backward()
    (a * 3).sum().backward()
    return a.grad


def zero_(L):
    a = x(L)
    (a * 2).sum().backward()
    a.grad.zero_()
    return a.grad


def grad_outputs_shape(L):
    a = x(L)
    return L.autograd.grad(a * 2, a, grad_outputs=L.ones(2))


def requires_grad_int_op(L):
    a = x(L)
    return (a > 1), (a > 1).requires_grad


def argmax_rg(L):
    a = x(L)
    return a.argmax()


def item_rg(L):
    a = x(L)
    return a.sum().item()


def numpy_rg(L):
    a = x(L)
    return a.numpy()


def inplace_leaf(L):
    a = x(L)
    a.add_(1)
    return a


def inplace_leaf_nograd(L):
    a = x(L)
    with L.no_grad(): a.add_(1)
    return a


def jacobian(L):
    return L.autograd.functional.jacobian(lambda t: t ** 2, L.tensor([1.0, 2.0]))


def hessian(L):
    return L.autograd.functional.hessian(lambda t: (t ** 3).sum(), L.tensor([1.0, 2.0]))


def vjp(L):
    return L.autograd.functional.vjp(lambda t: t ** 2, L.tensor([1.0, 2.0]), L.tensor([1.0, 1.0]))


def grad_none_before(L): return x(L).grad


def retain_grad(L):
    a = x(L)
    b = a * 2
    b.retain_grad()
    (b * b).sum().backward()
    return b.grad


def hook(L):
    a = x(L)
    a.register_hook(lambda g: g * 10)
    (a * 2).sum().backward()
    return a.grad


def clone_grad(L):
    a = x(L)
    c = a.clone()
    c.sum().backward()
    return a.grad, c.requires_grad, c.is_leaf


def is_leaf(L):
    a = x(L)
    b = a * 2
    c = L.tensor([1.0])
    return a.is_leaf, b.is_leaf, c.is_leaf, b.detach().is_leaf


def grad_fn_name(L):
    a = x(L)
    return (a * 2).grad_fn.name(), (a*2).grad_fn is not None, a.grad_fn


def backward_inputs(L):
    a, b = x(L), x(L)
    (a * b).sum().backward(inputs=[a])
    return a.grad, b.grad


def double_backward_no_create(L):
    a = x(L)
    g, = L.autograd.grad((a ** 3).sum(), a)
    return g.requires_grad


def enable_inside_nograd(L):
    a = x(L)
    with L.no_grad():
        with L.enable_grad(): b = a * 2
    return b.requires_grad


def nograd_decorator(L):
    @L.no_grad()
    def f(t): return t * 2
    return f(x(L)).requires_grad


def grad_fn_walk(L):
    a = x(L)
    y = ((a * 2).exp() + a).sum()
    names, todo = [], [y.grad_fn]
    while todo:
        fn = todo.pop()
        names.append(type(fn).__name__ in ("AccumulateGrad",) or fn.name().endswith("Backward0"))
        todo += [f for f, _ in fn.next_functions if f is not None]
    return names, y.grad_fn == y.grad_fn, len(y.grad_fn.next_functions)


CASES = {k: v for k, v in dict(globals()).items() if callable(v) and v.__module__ == __name__
         and k not in ("desc", "x", "test_autograd_as_torch", "run")}
# NOTE: known, a row that fails once the two agree: dualgrad's tensors do not record that
# inference_mode made them, so is_inference() is False where torch's says True
KNOWN = {"inference"}


def run(L, f):
    try:
        return desc(f(L))
    except Exception as e:     # noqa: BLE001 - compared with the other library's below
        return ("raises", type(e).__name__)


@pytest.mark.parametrize("case", sorted(CASES))
def test_autograd_as_torch(case):
    ours, theirs = run(eager, CASES[case]), run(torch, CASES[case])
    if case in KNOWN:
        assert ours != theirs, f"{case} agrees with torch now: take it off KNOWN"
    else:
        assert ours == theirs

"""torch.autograd.functional: Jacobians, Hessians and their products with a vector, for a
function of tensors, built on `autograd.grad` (one backward pass per output element for
`jacobian`; double backward for `jvp`, `hvp` and `vhp`, as torch computes them).

Results have torch's structure: a tensor when both the inputs and the outputs are single
tensors; a tuple over the inputs when they are a tuple, inside a tuple over the outputs when
those are. They are detached unless create_graph=True. With strict=False an output that does
not depend on an input gives zeros; strict=True raises, as torch's. `vectorize=True` and the
forward-mode strategies compute the same values by the same reverse passes.

>>> from dualgrad import eager
>>> from dualgrad.eager.autograd.functional import jacobian, hessian
>>> jacobian(lambda x: x ** 2, eager.tensor([1.0, 3.0])).tolist()
[[2.0, 0.0], [0.0, 6.0]]
>>> hessian(lambda x: (x ** 3).sum(), eager.tensor([1.0, 2.0])).tolist()
[[6.0, 0.0], [0.0, 12.0]]
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops

from .autograd import grad
from .core import Tensor
from .grad_mode import enable_grad

__all__ = ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"]


def _tuple(name, arg, what):
    """(arg as a tuple of tensors, whether it was one)."""
    one = isinstance(arg, Tensor)
    out = (arg,) if one else tuple(arg) if isinstance(arg, (tuple, list)) else None
    if out is None or not all(isinstance(t, Tensor) for t in out):
        raise TypeError(f"The {what} given to {name} must be either a Tensor or a tuple of "
                        f"Tensors but the given argument is {type(arg).__name__}.")
    return out, one


def _prepare(inputs, create_graph):
    """torch's _grad_preprocess: inputs the function is differentiated at, on the tape."""
    with enable_grad():
        if create_graph:
            return tuple(t.view_as(t) if t.requires_grad else t.detach().requires_grad_()
                         for t in inputs)
        return tuple(t.detach().requires_grad_() for t in inputs)


def _call(func, inputs, name, create_graph):
    with enable_grad():
        out = func(*inputs)
    outs, one = _tuple(name, out, "outputs of the user-provided function")
    return outs, one


def _finish(t, create_graph):
    return t if create_graph or t is None else t.detach()


def _zeros_for(grads, inputs, strict, name, what):
    out = []
    for i, (g, x) in enumerate(zip(grads, inputs)):
        if g is None:
            if strict:
                raise RuntimeError(f"The {what} for input {i} is independent of the input "
                                   f"(strict mode: {name} of a function whose output does "
                                   f"not depend on that input).")
            g = Tensor(np.zeros_like(x._array))
        out.append(g)
    return tuple(out)


def _fit(values, one):
    return values[0] if one else tuple(values)


def _check_v(v, refs, name, what):
    vs, _ = _tuple(name, v, what)
    if len(vs) != len(refs):
        raise RuntimeError(f"The given v should contain a single Tensor for each of the "
                           f"{what}s; got {len(vs)} for {len(refs)}.")
    for a, b in zip(vs, refs):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"Entry in v has invalid size: should be {tuple(b.shape)} but "
                               f"got {tuple(a.shape)}")
    return vs


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of func at inputs: for each output and input, a tensor of shape
    output.shape + input.shape."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError("torch.autograd.functional.jacobian: `strategy=\"forward-"
                                  "mode\"` needs `vectorize=True`, as in torch.")
    ins, in_one = _tuple("jacobian", inputs, "inputs")
    ins = _prepare(ins, create_graph)
    outs, out_one = _call(func, ins, "jacobian", create_graph)
    per_output = []
    for k, out in enumerate(outs):
        flat = out.reshape(-1)
        rows = [[] for _ in ins]
        for j in range(flat.shape[0]):
            grads = grad(flat[j], ins, retain_graph=True, create_graph=create_graph,
                         allow_unused=True) if out.requires_grad else (None,) * len(ins)
            grads = _zeros_for(grads, ins, strict, "jacobian",
                               f"output {k}")
            for i, g in enumerate(grads):
                rows[i].append(g)
        blocks = []
        for i, x in enumerate(ins):
            shape = tuple(out.shape) + tuple(x.shape)
            block = ops.stack(*rows[i], axis=0).reshape(shape) if rows[i] else \
                Tensor(np.zeros(shape, x._array.dtype))
            blocks.append(_finish(block, create_graph))
        per_output.append(_fit(blocks, in_one))
    return _fit(per_output, out_one)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a function with one single-element output: for each pair of inputs,
    a tensor of shape input_i.shape + input_j.shape."""
    ins, in_one = _tuple("hessian", inputs, "inputs")

    def gradient(*xs):
        outs, _ = _call(func, xs, "hessian", True)
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        grads = grad(outs[0].reshape(()), xs, create_graph=True, allow_unused=True)
        return _zeros_for(grads, xs, strict, "hessian", "gradient")

    out = jacobian(gradient, ins, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    if in_one:
        return out[0][0]
    return out


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): v weights the outputs (it may be left out for a single-element
    output)."""
    ins, in_one = _tuple("vjp", inputs, "inputs")
    ins = _prepare(ins, create_graph)
    outs, out_one = _call(func, ins, "vjp", create_graph)
    if v is None:
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function "
                               "returns a single Tensor with a single element.")
        vs = None
    else:
        vs = _check_v(v, outs, "vjp", "output")
    grads = grad(outs, ins, vs, create_graph=create_graph, retain_graph=True,
                 allow_unused=True) if any(o.requires_grad for o in outs) else (None,) * len(ins)
    grads = _zeros_for(grads, ins, strict, "vjp", "output")
    return (_fit([_finish(o, create_graph) for o in outs], out_one),
            _fit([_finish(g, create_graph) for g in grads], in_one))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v), by the double-backward trick torch uses: the vjp with a dummy
    vector is linear in it, and its gradient with respect to that vector, weighted by v,
    is J v."""
    ins, in_one = _tuple("jvp", inputs, "inputs")
    if v is None:
        if len(ins) != 1 or ins[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the "
                               "user-provided function is a single Tensor with a single "
                               "element.")
        vs = None
    else:
        vs = _check_v(v, ins, "jvp", "input")
    ins = _prepare(ins, create_graph)
    outs, out_one = _call(func, ins, "jvp", create_graph)
    dummies = tuple(Tensor(np.zeros_like(o._array)).requires_grad_() for o in outs)
    grads = grad(outs, ins, dummies, create_graph=True, allow_unused=True)
    used = [(g, x) for g, x in zip(grads, ins) if g is not None]
    if vs is None:
        vs = tuple(Tensor(np.ones_like(x._array)) for x in ins)
    weights = [w for g, w in zip(grads, vs) if g is not None]
    if used:
        jv = grad([g for g, _ in used], dummies, weights, create_graph=create_graph,
                  allow_unused=True)
    else:
        jv = (None,) * len(outs)
    jv = _zeros_for(jv, outs, strict, "jvp", "output")
    return (_fit([_finish(o, create_graph) for o in outs], out_one),
            _fit([_finish(g, create_graph) for g in jv], out_one))


def _hessian_products(name, func, inputs, v, create_graph, strict, transposed):
    ins, in_one = _tuple(name, inputs, "inputs")
    vs = _check_v(v, ins, name, "input") if v is not None else None
    if vs is None and not (len(ins) == 1 and ins[0].numel() == 1):
        raise RuntimeError("The vector v can only be None if the input to the user-provided "
                           "function is a single Tensor with a single element.")
    if vs is None:
        vs = tuple(Tensor(np.ones_like(x._array)) for x in ins)
    ins = _prepare(ins, create_graph)
    outs, _ = _call(func, ins, name, create_graph)
    if len(outs) != 1 or outs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {name} should "
                           f"contain a single element")
    out = outs[0]
    jac = grad(out.reshape(()), ins, create_graph=True, allow_unused=True)
    pairs = [(j, x, w) for j, x, w in zip(jac, ins, vs) if j is not None]
    if not pairs:
        prods = (None,) * len(ins)
    elif transposed:     # vhp: v^T H, the gradient of (grad . v)
        prods = grad([j for j, _, _ in pairs], ins, [w for _, _, w in pairs],
                     create_graph=create_graph, allow_unused=True)
    else:                # hvp: H v, as torch: through a dummy vector, double backward
        dummies = tuple(Tensor(np.zeros_like(x._array)).requires_grad_() for _, x, _ in pairs)
        back = grad([j for j, _, _ in pairs], ins, dummies, create_graph=True,
                    allow_unused=True)
        used = [(b, w) for b, w in zip(back, vs) if b is not None]
        prods = grad([b for b, _ in used], dummies, [w for _, w in used],
                     create_graph=create_graph, allow_unused=True) if used else \
            (None,) * len(dummies)
        full, k = [], 0
        for j in jac:
            full.append(prods[k] if j is not None else None)
            k += j is not None
        prods = tuple(full)
    prods = _zeros_for(prods, ins, strict, name, "output")
    return (_finish(out, create_graph),
            _fit([_finish(p, create_graph) for p in prods], in_one))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a function with one single-element output."""
    return _hessian_products("hvp", func, inputs, v, create_graph, strict, False)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a function with one single-element output."""
    return _hessian_products("vhp", func, inputs, v, create_graph, strict, True)

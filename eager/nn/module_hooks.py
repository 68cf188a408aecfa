"""Module hooks, as torch.nn.Module's: `register_forward_pre_hook` (may replace the
positional inputs), `register_forward_hook` (may replace the output), both with
`prepend=` and `with_kwargs=`, and `register_full_backward_hook(hook(module, grad_input,
grad_output))` (may return a replacement grad_input) for modules of one tensor input and one
tensor output. Each returns a handle whose `.remove()` unregisters the hook.

>>> from dualgrad import eager
>>> lin = eager.nn.Linear(2, 2)
>>> seen = []
>>> h = lin.register_forward_hook(lambda m, args, out: seen.append(tuple(out.shape)))
>>> _ = lin(eager.ones(3, 2)); h.remove(); _ = lin(eager.ones(1, 2))
>>> seen
[(3, 2)]
"""
from __future__ import annotations

from ..autograd import Function
from ..core import Tensor
from ..hooks import RemovableHandle

PRE, POST, BACKWARD = "_forward_pre_hooks", "_forward_hooks", "_backward_hooks"


def add(module, kind, hook, with_kwargs=False, prepend=False):
    """Register (hook, with_kwargs) in the module's list of `kind`; the handle removes it."""
    hooks = module.__dict__.setdefault(kind, [])
    module.__dict__["_hooked"] = True   # NOTE: Module.__call__ looks for this one key
    entry = (hook, with_kwargs)
    if prepend:
        hooks.insert(0, entry)
    else:
        hooks.append(entry)
    return RemovableHandle(hooks, entry)


def call(module, args, kwargs):
    """module(*args, **kwargs) with its hooks, in torch's order: pre-hooks, forward,
    forward hooks; backward hooks see the gradients of the (pre-hooked) input and output."""
    d = module.__dict__
    for hook, with_kwargs in list(d.get(PRE, ())):
        if with_kwargs:
            res = hook(module, args, kwargs)
            if res is not None:
                args, kwargs = res
        else:
            res = hook(module, args)
            if res is not None:
                args = res if isinstance(res, tuple) else (res,)
    backward = d.get(BACKWARD)
    state = None
    if backward:
        state = {"module": module, "hooks": backward, "grad_output": None, "called": False}
        args = _watch_input(state, args)
    out = module.forward(*args, **kwargs)
    for hook, with_kwargs in list(d.get(POST, ())):
        res = hook(module, args, kwargs, out) if with_kwargs else hook(module, args, out)
        if res is not None:
            out = res
    if state is not None:
        out = _watch_output(state, out)
    return out


def _one_tensor(module, what, values):
    tensors = [v for v in values if isinstance(v, Tensor)]
    if len(tensors) != 1 or len(values) != 1:
        raise NotImplementedError(
            f"register_full_backward_hook on {type(module).__name__}: dualgrad supports modules "
            f"of one tensor input and one tensor output; this call has {len(values)} {what} "
            f"({len(tensors)} tensors)")


def _watch_input(state, args):
    _one_tensor(state["module"], "positional inputs", args)
    state["input_grad"] = args[0].requires_grad
    return (_HookedInput.apply(args[0], state),)


def _watch_output(state, out):
    _one_tensor(state["module"], "outputs", out if isinstance(out, tuple) else (out,))
    return _HookedOutput.apply(out, state)


def _run(state, grad_input):
    grad_input = (grad_input,)
    for hook, _ in list(state["hooks"]):
        res = hook(state["module"], grad_input, (state["grad_output"],))
        if res is not None:
            grad_input = tuple(res)
    return grad_input[0]


class _HookedOutput(Function):
    """Identity on the output: its backward notes grad_output (and, when no input needs a
    gradient, runs the hooks with grad_input (None,), as torch)."""

    @staticmethod
    def forward(ctx, out, state):
        ctx.state = state
        return out.view_as(out)

    @staticmethod
    def backward(ctx, g):
        ctx.state["grad_output"] = g
        if not ctx.state["input_grad"]:
            _run(ctx.state, None)
        return g, None


class _HookedInput(Function):
    """Identity on the input: its backward is where grad_input is known; the hooks run there
    and may replace it."""

    @staticmethod
    def forward(ctx, x, state):
        ctx.state = state
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return _run(ctx.state, g), None

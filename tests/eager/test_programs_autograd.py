"""PyTorch programs around autograd, written as users write them (custom Function with
ctx.save_for_backward, gradient penalty and Hessian-vector products with
autograd.grad(create_graph=True), module and tensor hooks, gradient accumulation), run on
dualgrad.eager and on torch: the same values and gradients."""
from __future__ import annotations

import numpy as np
import pytest

import dualgrad.eager
from tests.eager._compare import assert_same_results

real_torch = pytest.importorskip("torch")


def custom_function_program(torch):
    class ScaledReLU(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input, scale=2.0):
            ctx.save_for_backward(input)
            ctx.scale = scale
            return input.clamp(min=0) * scale

        @staticmethod
        def backward(ctx, grad_output):
            input, = ctx.saved_tensors
            grad_input = grad_output.clone()
            grad_input[input < 0] = 0
            return grad_input * ctx.scale, None

    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, i):
            result = i.exp()
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            result, = ctx.saved_tensors
            return grad_output * result

    x = torch.tensor([[-1.0, 0.5, 2.0], [0.3, -0.2, 1.0]], requires_grad=True)
    y = ScaledReLU.apply(x, 3.0)
    z = Exp.apply(y * 0.1).sum()
    z.backward()
    with torch.no_grad():
        plain = ScaledReLU.apply(x, 3.0)
    return {"y": y, "z": z, "x.grad": x.grad, "no_grad_requires": plain.requires_grad}


def double_backward_program(torch):
    w = torch.tensor([0.5, -1.5, 2.0], requires_grad=True)
    inp = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 0.0]], requires_grad=True)
    out = torch.tanh(inp @ w).sum()
    g, = torch.autograd.grad(out, inp, create_graph=True)
    penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()      # a WGAN-GP style gradient penalty
    penalty.backward()
    x = torch.tensor([0.3, 0.2, -0.4], requires_grad=True)
    f = (x ** 3).sum() + x[0] * x[1] * x[2]
    gx, = torch.autograd.grad(f, x, create_graph=True)
    hv, = torch.autograd.grad(gx, x, grad_outputs=torch.tensor([1.0, 0.0, -1.0]),
                              retain_graph=True)
    both = torch.autograd.grad([f * 2, (x ** 2).sum()], [x])
    unused = torch.autograd.grad((x * 2).sum(), [x, w], allow_unused=True, materialize_grads=True)
    return {"penalty": penalty, "w.grad": w.grad, "inp.grad": inp.grad, "g": g.detach(),
            "hvp": hv, "sum_of_two": both[0], "unused": unused[1], "x.grad_untouched":
            x.grad is None, "hvp_requires": hv.requires_grad}


def hooks_program(torch):
    lin = torch.nn.Linear(3, 2)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[0.1, 0.2, 0.3], [-0.1, 0.4, 0.0]]))
        lin.bias.fill_(0.1)
    activations, grads = {}, []

    def save_activation(name):
        def hook(module, inp, output):
            activations[name] = output.detach()
        return hook

    h = lin.register_forward_hook(save_activation("lin"))
    pre = lin.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    bh = lin.register_full_backward_hook(lambda m, gin, gout: grads.append((gin[0], gout[0])))
    t = torch.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    o = lin(t)
    o.register_hook(lambda g: g * 10)
    (o ** 2).sum().backward()
    h.remove(), pre.remove(), bh.remove()
    after = lin(t)
    scaled = torch.nn.Linear(3, 2)
    scaled.register_full_backward_hook(lambda m, gin, gout: (gin[0] * 0,))
    t2 = torch.ones(1, 3, requires_grad=True)
    scaled(t2).sum().backward()
    return {"activation": activations["lin"], "t.grad": t.grad, "grad_input": grads[0][0],
            "grad_output": grads[0][1], "after_remove": after, "hooks_ran": len(grads),
            "replaced_grad": t2.grad}


def accumulation_program(torch):
    model = torch.nn.Linear(3, 1)
    with torch.no_grad():
        model.weight.fill_(0.2)
        model.bias.zero_()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.arange(24, dtype=torch.float32).reshape(8, 3) / 10
    target = torch.ones(8, 1)
    accumulation_steps = 4
    opt.zero_grad()
    for i in range(8):
        loss = torch.nn.functional.mse_loss(model(data[i:i + 1]), target[i:i + 1])
        (loss / accumulation_steps).backward()
        if (i + 1) % accumulation_steps == 0:
            opt.step()
            opt.zero_grad()
    a = torch.ones(2, requires_grad=True)
    b = a * 2
    b.retain_grad()
    (b ** 2).sum().backward()
    q = torch.tensor([1.0, 2.0], requires_grad=True)
    torch.autograd.backward([(q * q).sum(), (q * 3).sum()])
    r = torch.tensor([1.0, 2.0], requires_grad=True)
    s = torch.tensor([3.0], requires_grad=True)
    torch.autograd.backward((r * s).sum(), inputs=[r])
    return {"weight": model.weight, "bias": model.bias, "b.grad": b.grad, "q.grad": q.grad,
            "r.grad": r.grad, "s.grad_none": s.grad is None, "leaf": [a.is_leaf, b.is_leaf]}


@pytest.mark.parametrize("program", [custom_function_program, double_backward_program,
                                     hooks_program, accumulation_program])
def test_program_equals_torch(program):
    assert_same_results(program(dualgrad.eager), program(real_torch))


def test_function_backward_with_the_wrong_shape_names_the_function():
    torch = dualgrad.eager

    class Bad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g.sum()

    x = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"BadBackward returned an invalid gradient"):
        Bad.apply(x).sum().backward()


def test_grad_of_an_unused_input_raises_unless_allowed():
    torch = dualgrad.eager
    x, y = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        torch.autograd.grad((x * 2).sum(), [x, y])
    assert torch.autograd.grad((x * 2).sum(), [x, y], allow_unused=True)[1] is None


def test_grad_frees_the_graph_unless_retained():
    torch = dualgrad.eager
    x = torch.ones(2, requires_grad=True)
    y = (x.exp() * 2).sum()
    torch.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match="second time"):
        torch.autograd.grad(y, x)


def test_backward_hook_on_a_two_input_module_raises():
    torch = dualgrad.eager

    class Two(torch.nn.Module):
        def forward(self, a, b):
            return a + b

    m = Two()
    m.register_full_backward_hook(lambda *a: None)
    with pytest.raises(NotImplementedError, match="one tensor input"):
        m(torch.ones(1), torch.ones(1))

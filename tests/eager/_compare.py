"""What the test_programs_*.py files share: run one program on both libraries, compare."""
from __future__ import annotations

import numpy as np


def as_numpy(v):
    if hasattr(v, "detach"):
        v = v.detach()
    return v.numpy() if hasattr(v, "numpy") else np.asarray(v)


def assert_same_results(ours, ref, rtol=1e-5, atol=1e-6):
    """Every value of two {name: result} dicts agrees: values, shapes and dtypes."""
    assert ours.keys() == ref.keys()
    for k in ref:
        a, b = as_numpy(ours[k]), as_numpy(ref[k])
        if b.dtype.kind in "UO":    # names, lists of strings
            assert a.tolist() == b.tolist(), f"{k}: {a.tolist()} != torch's {b.tolist()}"
            continue
        assert a.shape == b.shape, f"{k}: shape {a.shape} != torch's {b.shape}"
        assert str(a.dtype) == str(b.dtype), f"{k}: dtype {a.dtype} != torch's {b.dtype}"
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol,
                                   atol=atol, err_msg=k)


def eager_and_compiled(loss_fn, module, x):
    """[loss, every parameter's gradient] of loss_fn(x), run eagerly and then compiled
    (dualgrad.compiler.compile), and the compiled function (to look into its graph)."""
    from dualgrad import compiler, eager
    compiled = compiler.compile(loss_fn)
    got = []
    for fn in (loss_fn, compiled):
        module.zero_grad()
        loss = fn(eager.tensor(x))
        loss.backward()
        got.append([loss.detach().numpy()] + [p.grad.numpy().copy() for p in module.parameters()])
    return got, compiled


def state(model):
    """A model's state_dict as NumPy arrays (copies)."""
    return {k: as_numpy(v).copy() for k, v in model.state_dict().items()}


def load(torch, model, arrays):
    """Load NumPy arrays into a model of either library."""
    model.load_state_dict({k: torch.tensor(v) for k, v in arrays.items()})

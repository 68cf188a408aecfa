"""The meta device and symbolic dims (eager/meta.py, ops/symbolic.py), in the idiom users write.

Where torch has the same behaviour (meta factories, `.to("meta")`, materialising errors,
mixing devices) torch is the oracle; symbolic dims go past torch's meta device (its dims
are concrete), so those tests state what the message must name. Small, fixed cases: the
whole module runs in about a second.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from dualgrad import eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F
from dualgrad.ops import ShapeError

torch = pytest.importorskip("torch")

N = eager.Dim("N")


def test_factories_on_meta_hold_no_values():
    x = eager.empty(10**6, 10**6, device="meta")          # 4 TB of float32, none allocated
    assert x.shape == (10**6, 10**6) and str(x.device) == "meta" and x.dtype == np.float32
    for make in (eager.zeros, eager.ones, eager.randn, eager.rand):
        t = make(3, 4, device="meta")
        assert t.shape == (3, 4) and t.device == eager.device("meta")
    assert eager.randint(0, 5, (2, 3), device="meta").dtype == np.int64
    assert eager.zeros_like(x).device.type == "meta"       # torch: *_like keeps the device
    assert repr(eager.empty(3, 4, device="meta")) == repr(torch.empty(3, 4, device="meta"))


def test_values_cannot_be_read_as_in_torch():
    ours, theirs = eager.empty(3, device="meta"), torch.empty(3, device="meta")
    for read in (lambda t: t.sum().item(), lambda t: t.numpy(), lambda t: t.tolist(),
                 lambda t: t.to("cpu")):
        with pytest.raises(Exception) as e_torch:
            read(theirs)
        with pytest.raises(type(e_torch.value)):
            read(ours)
    with pytest.raises(RuntimeError, match="Boolean value of a meta tensor"):
        bool(ours.sum() > 0)


def test_mixing_devices_is_refused_but_a_0d_cpu_tensor_is_not():
    m = eager.empty(3, 4, device="meta")
    with pytest.raises(RuntimeError, match="not on the expected device meta"):
        m + eager.randn(3, 4)
    with pytest.raises(RuntimeError, match="not on the expected device meta"):
        eager.randn(3, 4) + m
    assert (m * eager.tensor(2.0)).shape == (3, 4) and (2 - m).device.type == "meta"


def test_model_to_meta_forward_backward_and_adam_step():
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 10))
    first = model[0].weight
    assert model.to("meta") is model and model[0].weight is first    # same Parameter objects
    assert isinstance(first, nn.Parameter) and first.device.type == "meta"
    assert repr(first) == repr(torch.nn.Linear(64, 32).to("meta").weight)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    x, y = eager.empty(N, 64, device="meta"), eager.empty(N, dtype=eager.int64, device="meta")
    loss = F.cross_entropy(model(x), y)
    assert loss.shape == () and loss.requires_grad
    loss.backward()
    assert [p.grad.shape for p in model.parameters()] == [(32, 64), (32,), (10, 32), (10,)]
    assert opt.step() is None
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_a_shape_error_on_meta_names_the_op_the_shapes_and_the_line():
    w = eager.empty(10, 48, device="meta", requires_grad=True)
    h = eager.empty(N, 48, device="meta")
    with pytest.raises(ShapeError, match=r"matmul: cannot multiply \(N, 48\) by \(10, 48\).*"
                                         r"test_meta.py:\d+"):
        h @ w


def test_symbolic_dims_stay_symbolic_through_ops():
    x = eager.empty(N, 8, 8, device="meta")
    assert x.shape[0] is N or x.shape[0] == N
    assert x.reshape(x.shape[0], -1).shape == (N, 64)
    assert x.flatten(1).shape == (N, 64) and x.view(-1, 8).shape == (N * 8, 8)
    assert x[:, 1:].shape == (N, 7, 8) and x[1:].shape == (N - 1, 8, 8)
    assert eager.cat([x, x], dim=0).shape == (N * 2, 8, 8)
    assert x.mean(dim=0).shape == (8, 8) and x.sum().shape == ()
    assert (x.shape[0] // 2, x.shape[0] * 8, x.shape[0] - 1) == (N // 2, N * 8, N - 1)
    y = eager.empty(N, device="meta")                   # a second input sharing N
    assert (x.sum(dim=(1, 2)) + y).shape == (N,)
    with pytest.raises(ShapeError, match=r"cannot broadcast \(N,\), \(M,\)"):
        y + eager.empty(eager.Dim("M"), device="meta")


def test_a_reshape_that_fixes_the_batch_names_the_symbol_the_value_and_the_line():
    x = eager.empty(N, 64, device="meta")
    with pytest.raises(ShapeError) as e:
        x.view(32, -1)
    msg = str(e.value)
    assert "puts 32 where the symbolic dim N was" in msg and "only when N = 32" in msg
    assert re.search(r"test_meta.py:\d+", msg)
    with pytest.raises(ShapeError, match=r"N must be a multiple of 4"):
        eager.empty(N, 8, 4, 4, device="meta").view(-1, 512)


def test_a_layer_applied_to_a_flattened_symbol_says_what_it_would_fix():
    fc = nn.Linear(128, 10).to("meta")
    x = eager.empty(N * 4, 32, device="meta")
    with pytest.raises(ShapeError, match=r"has N\*4 features .* only when N = 32, but N is "
                                         r"symbolic"):
        fc(x.view(32, -1))


def test_python_needs_a_number_from_a_symbol_is_a_clear_error():
    from dualgrad.ops.symbolic import SymbolicValueError
    x = eager.empty(N, 3, device="meta")
    with pytest.raises(SymbolicValueError, match="symbolic dim N has no value"):
        range(x.shape[0])
    assert x.shape[0] > 1 and x.shape[0] != 1      # every symbol is at least 2


def test_outer_broadcast_warns_at_the_line_in_eager_and_meta():
    with pytest.warns(UserWarning, match=r"sub: \(4, 1\) and \(4,\) broadcast to \(4, 4\)") as w:
        eager.randn(4, 1) - eager.randn(4)
    assert w[0].filename == __file__
    with pytest.warns(UserWarning, match=r"broadcast to \(N, N\)"):
        eager.empty(N, 1, device="meta") * eager.empty(N, device="meta")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eager.randn(4, 3) + eager.randn(3)                 # a bias: no warning
        (eager.randn(4, 1, requires_grad=True) * eager.randn(1, 4)).sum().backward()


def test_check_from_code_reports_error_and_data_dependent_branch():
    class Gate(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(64, 10)

        def forward(self, x):
            if x.mean() > 0:               # a branch on a value: not decidable on shapes
                x = x * 2
            return self.fc(x)

    report = eager.check(Gate(), F.cross_entropy, [(N, 64), ((N,), "int64")])
    (f,) = report.findings
    assert f.kind == "unexplored" and f.file == __file__
    assert "data-dependent branch at line" in f.message
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    before = [p.grad for p in model.parameters()]
    ok = eager.check(model, F.cross_entropy, [(N, 64), ((N,), "int64")],
                     optim.SGD(model.parameters(), lr=0.1))
    assert ok.ok and ok.steps == 1 and ok.seconds < 0.5
    assert [p.grad for p in model.parameters()] == before       # left as found

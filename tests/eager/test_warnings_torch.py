"""The warnings torch gives for everyday calls, given by dualgrad too: deprecated forms
(implicit softmax dims, size_average, old init names, set_default_tensor_type, chain_matmul,
meshgrid without indexing), likely bugs (torch.tensor(tensor), x.T on 3-d tensors, a
broadcasting loss target, dropout on a one-layer RNN, kl_div's 'mean', a scheduler stepped
before its optimizer) and none where torch gives none. Each call runs in both libraries under
`warnings.catch_warnings(record=True)`; the categories must agree, and the text too where
dualgrad uses torch's words (the broadcasting losses name the loss and the shapes in
dualgrad's own words). Warnings torch gives once per process (x.T, meshgrid, chain_matmul,
set_default_tensor_type) are compared in a fresh process of their own, so that no earlier
test has used them up in either library.
"""
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

from dualgrad import eager


def F(lib):
    return lib.nn.functional


def _sched_first(lib):
    p = lib.nn.Parameter(lib.zeros(1))
    opt = lib.optim.SGD([p], lr=0.1)
    lib.optim.lr_scheduler.StepLR(opt, 1).step()


CASES = {   # name -> (call, whether the text is torch's)
    "softmax without dim": (lambda L: F(L).softmax(L.ones(2, 3)), True),
    "log_softmax without dim": (lambda L: F(L).log_softmax(L.ones(2, 3)), True),
    "softmin without dim": (lambda L: F(L).softmin(L.ones(2, 3)), True),
    "Softmax module without dim": (lambda L: L.nn.Softmax()(L.ones(2, 3)), True),
    "softmax with dim": (lambda L: F(L).softmax(L.ones(2, 3), dim=1), True),
    "tensor of a tensor": (lambda L: L.tensor(L.ones(2)), True),
    "tensor of a list": (lambda L: L.tensor([1.0, 2.0]), True),
    "T of a 3-d tensor": (lambda L: (L.ones(2, 3, 4).T, L.ones(2, 3, 4).T), True),
    "T of a matrix": (lambda L: L.ones(2, 3).T, True),
    "T of a vector": (lambda L: L.ones(3).T, True),
    "mse_loss broadcast": (lambda L: F(L).mse_loss(L.ones(4, 1), L.ones(4)), False),
    "l1_loss broadcast": (lambda L: F(L).l1_loss(L.ones(4, 1), L.ones(4)), False),
    "smooth_l1_loss broadcast": (lambda L: F(L).smooth_l1_loss(L.ones(4, 1), L.ones(4)), False),
    "mse_loss same shape": (lambda L: F(L).mse_loss(L.ones(4), L.ones(4)), True),
    "size_average": (lambda L: L.nn.MSELoss(size_average=False), True),
    "reduce": (lambda L: F(L).l1_loss(L.ones(2), L.ones(2), reduce=False), True),
    "xavier_uniform": (lambda L: L.nn.init.xavier_uniform(L.empty(2, 2)), True),
    "LSTM dropout one layer": (lambda L: L.nn.LSTM(2, 3, num_layers=1, dropout=0.5), True),
    "GRU dropout two layers": (lambda L: L.nn.GRU(2, 3, num_layers=2, dropout=0.5), True),
    "kl_div mean": (lambda L: F(L).kl_div(L.zeros(2, 3), L.full((2, 3), 1 / 3)), True),
    "kl_div batchmean": (lambda L: F(L).kl_div(L.zeros(2, 3), L.full((2, 3), 1 / 3),
                                               reduction="batchmean"), True),
    "meshgrid without indexing": (lambda L: [L.meshgrid(L.arange(2), L.arange(3))
                                             for _ in range(2)], True),
    "meshgrid with indexing": (lambda L: L.meshgrid(L.arange(2), L.arange(3), indexing="xy"),
                               True),
    "chain_matmul": (lambda L: [L.chain_matmul(L.ones(2, 2), L.ones(2, 2)) for _ in range(2)],
                     True),
    "scheduler before optimizer": (_sched_first, True),
    "std of one element": (lambda L: L.ones(1).std(), False),
    "clip_grad_norm": (lambda L: L.nn.utils.clip_grad_norm(L.nn.Linear(2, 2).parameters(), 1.0),
                       True),
}


def _record(lib, call):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            call(lib)
            err = None
        except Exception as e:     # noqa: BLE001 - compared below
            err = type(e).__name__
    return err, sorted((m.category.__name__, str(m.message).split(" (Triggered internally")[0])
                       for m in w)


ONCE = {"T of a 3-d tensor", "T of a vector", "meshgrid without indexing", "chain_matmul"}


def _fresh(name):
    """A warn-once case recorded in a new process of its own: [torch's, dualgrad's]."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-m", "tests.eager.test_warnings_torch", name],
                         cwd=root, capture_output=True, text=True, timeout=300,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("name", sorted(CASES))
def test_warnings_as_torch(name):
    call, same_text = CASES[name]
    if name in ONCE:
        (t_err, theirs), (o_err, ours) = [(e, [tuple(m) for m in w]) for e, w in _fresh(name)]
    else:
        (t_err, theirs), (o_err, ours) = _record(torch, call), _record(eager, call)
    assert o_err == t_err
    assert [c for c, _ in ours] == [c for c, _ in theirs], (ours, theirs)
    if same_text:
        assert ours == theirs


def test_set_default_tensor_type_as_torch():
    try:
        got = []
        for lib in (torch, eager):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                lib.set_default_tensor_type("torch.DoubleTensor")
                made = str(lib.ones(1).dtype).replace("torch.", "")
                lib.set_default_tensor_type(lib.FloatTensor)
            errors = []
            for bad in ("torch.IntTensor", lib.cuda.FloatTensor):
                try:
                    lib.set_default_tensor_type(bad)
                except TypeError as e:
                    errors.append(str(e))
            got.append((made, str(lib.get_default_dtype()).replace("torch.", ""), errors,
                        len(w) <= 1))
        assert got[1] == got[0]
    finally:
        torch.set_default_dtype(torch.float32)
        eager.set_default_dtype(np.float32)


if __name__ == "__main__":   # NOTE: _fresh's process: one case, in both libraries
    print(json.dumps([_record(torch, CASES[sys.argv[1]][0]),
                      _record(eager, CASES[sys.argv[1]][0])]))

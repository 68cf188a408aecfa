"""The class hierarchy as torch's: for every two classes torch and dualgrad.eager both name
(in torch.nn and torch.nn.modules.<file>, optim, lr_scheduler, utils.data, distributions,
autograd, amp and torch itself), `issubclass(a, b)` is the same in both.

Programs test classes in weight-init, freezing and parameter-grouping loops:
`if isinstance(m, nn.Conv2d)`, `isinstance(m, nn.Dropout)`,
`isinstance(m, nn.modules.batchnorm._BatchNorm)`. A dualgrad MaxPool1d that is a MaxPool2d,
or an EmbeddingBag that is an Embedding, makes such a loop touch more layers than it does
under torch, and nothing says so. The pairs are generated from the two libraries' namespaces,
so a class added to either side is checked with every other one.
"""
import inspect

import pytest
import torch

from dualgrad import eager

NAMESPACES = {
    "nn": (torch.nn, eager.nn),
    "optim": (torch.optim, eager.optim),
    "optim.lr_scheduler": (torch.optim.lr_scheduler, eager.optim.lr_scheduler),
    "utils.data": (torch.utils.data, eager.utils.data),
    "distributions": (torch.distributions, eager.distributions),
    "autograd": (torch.autograd, eager.autograd),
    "amp": (torch.amp, eager.amp),
    "torch": (torch, eager),
}


def _classes(ns):
    return {n: c for n in dir(ns) if isinstance(c := getattr(ns, n, None), type)}


def _shared(tns, dns):
    t, d = _classes(tns), _classes(dns)
    return {n: (t[n], d[n]) for n in t.keys() & d.keys()}


def _torch_files():
    """torch.nn.modules' files that dualgrad mirrors as eager.nn.modules.<file>."""
    return sorted(f for f in vars(eager.nn.modules) if inspect.ismodule(
        getattr(torch.nn.modules, f, None)))


def _file_classes(f):
    """The classes torch defines in torch.nn.modules.<f>, private bases included, paired
    with dualgrad's of the same name (from nn.modules.<f>, or nn for the public ones)."""
    tmod = getattr(torch.nn.modules, f)
    dmod = getattr(eager.nn.modules, f)
    out = {}
    for n, c in vars(tmod).items():
        if isinstance(c, type) and c.__module__ == tmod.__name__:
            mine = getattr(dmod, n, None) or (getattr(eager.nn, n, None)
                                              if not n.startswith("_") else None)
            out[n] = (c, mine)
    return out


@pytest.mark.parametrize("space", sorted(NAMESPACES))
def test_issubclass_as_torch(space):
    shared = _shared(*NAMESPACES[space])
    assert len(shared) >= 2, f"{space}: no classes in common?"
    wrong = [f"issubclass({a}, {b}): torch {ta}, dualgrad {not ta}"
             for a, (t1, d1) in sorted(shared.items()) for b, (t2, d2) in sorted(shared.items())
             if a != b and (ta := issubclass(t1, t2)) != issubclass(d1, d2)]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("f", _torch_files())
def test_nn_modules_file_as_torch(f):
    """nn.modules.<f>: every private base torch's public classes there derive from, and that
    dualgrad has a class deriving from, exists in dualgrad (`nn.modules.conv._ConvNd`,
    `nn.modules.batchnorm._BatchNorm`, ...), and issubclass agrees over the file's classes
    and nn's (a private base against every public class)."""
    classes = _file_classes(f)
    mine = {n: pair for n, pair in classes.items() if pair[1] is not None}
    public = _shared(torch.nn, eager.nn)
    assert any(not n.startswith("_") for n in mine), f"nn.modules.{f}: nothing shared"
    missing = [b for b, (tb, db) in classes.items() if b.startswith("_") and db is None and any(
        issubclass(tc, tb) and tc is not tb for n, (tc, dc) in mine.items())]
    assert not missing, f"nn.modules.{f}: dualgrad lacks torch's bases {missing}"
    wrong = [f"issubclass({a}, {b}): torch {ta}"
             for a, (t1, d1) in sorted({**mine, **public}.items())
             for b, (t2, d2) in sorted(mine.items())
             if a != b and (ta := issubclass(t1, t2)) != issubclass(d1, d2)]
    assert not wrong, "\n".join(wrong)


def test_the_loop_users_write():
    """A Kaiming init loop over Conv2d and a freeze loop over BatchNorm2d touch exactly the
    layers they name, as in torch (the same model built in both)."""
    def build(nn):
        return nn.Sequential(nn.Conv1d(2, 2, 1), nn.Conv2d(2, 2, 1), nn.ConvTranspose1d(2, 2, 1),
                             nn.ConvTranspose2d(2, 2, 1), nn.MaxPool1d(2), nn.MaxPool2d(2),
                             nn.BatchNorm1d(2), nn.BatchNorm2d(2), nn.InstanceNorm2d(2),
                             nn.Dropout(), nn.Dropout2d(), nn.AlphaDropout(),
                             nn.Embedding(3, 2), nn.EmbeddingBag(3, 2), nn.ReLU6(),
                             nn.Hardtanh(), nn.Softmax(1), nn.LogSoftmax(1), nn.ELU(), nn.CELU(),
                             nn.ZeroPad2d(1), nn.ConstantPad2d(1, 0.0), nn.ReflectionPad1d(1))
    picks = [nn_name for nn_name in ("Conv2d", "ConvTranspose2d", "MaxPool2d", "BatchNorm2d",
                                     "Dropout", "Embedding", "Hardtanh", "Softmax", "ELU",
                                     "ConstantPad2d", "ReflectionPad2d")]
    for name in picks:
        got = [i for i, m in enumerate(build(eager.nn)) if isinstance(m, getattr(eager.nn, name))]
        want = [i for i, m in enumerate(build(torch.nn)) if isinstance(m, getattr(torch.nn, name))]
        assert got == want, (name, got, want)

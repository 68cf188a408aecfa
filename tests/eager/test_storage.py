"""Storage as torch sees it: a view (slicing, transpose, select, unsqueeze, detach, ...) lies in
the storage of the tensor it is a view of, so storage_offset() and as_strided, which reads that
storage, agree with torch's; checked on random views and random strided windows, values,
float64 gradients and writes through the result."""
import warnings

import numpy as np
import pytest
import torch

from dualgrad import eager
from dualgrad.compiler import compile

# each a view as users write it, applied the same way to a torch and a dualgrad tensor
VIEWS = {
    "slice": lambda t: t[1:3],
    "step_slice": lambda t: t[:, 1::2],
    "transpose": lambda t: t.t(),
    "select": lambda t: t[2],
    "narrow": lambda t: t.narrow(1, 2, 3),
    "unsqueeze_slice": lambda t: t[1:].unsqueeze(0),
    "detach_slice": lambda t: t[2:].detach(),
    "view_of_view": lambda t: t[1:][:, 2:],
    "reshape": lambda t: t.reshape(6, 4)[1:],
}


def _windows(rng, numel, count=6):
    """Random (size, stride, storage_offset) that stay inside a storage of numel elements."""
    out = []
    while len(out) < count:
        nd = int(rng.integers(1, 3))
        size = tuple(int(n) for n in rng.integers(1, 4, nd))
        stride = tuple(int(s) for s in rng.integers(0, 5, nd))
        need = sum((n - 1) * s for n, s in zip(size, stride)) + 1
        if need <= numel:
            out.append((size, stride, int(rng.integers(0, numel - need + 1))))
    return out


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_storage_offset_and_as_strided_match_torch(view):
    rng = np.random.default_rng(sorted(VIEWS).index(view))
    base = np.arange(24.0).reshape(4, 6)
    tb, db = torch.tensor(base), eager.tensor(base)
    tv, dv = VIEWS[view](tb), VIEWS[view](db)
    assert dv.storage_offset() == tv.storage_offset()
    assert dv.stride() == tv.stride()
    for size, stride, offset in _windows(rng, 24):
        for kw in ({}, {"storage_offset": offset}):
            try:
                want = torch.as_strided(tv, size, stride, **kw)
            except RuntimeError:
                with pytest.raises(Exception):
                    eager.as_strided(dv, size, stride, **kw)
                continue
            got = eager.as_strided(dv, size, stride, **kw)
            np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("view", ["slice", "transpose", "narrow", "step_slice"])
def test_gradient_reaches_the_view_at_its_own_positions(view):
    rng = np.random.default_rng(7)
    base = rng.standard_normal((4, 6))
    for size, stride, offset in _windows(rng, 24, count=4):
        tv = VIEWS[view](torch.tensor(base))     # a leaf view: it keeps the base's storage
        tv.requires_grad_()
        dv = VIEWS[view](eager.tensor(base))
        dv.requires_grad_()
        w = rng.standard_normal(size)
        (torch.as_strided(tv, size, stride, offset) * torch.tensor(w)).sum().backward()
        (eager.as_strided(dv, size, stride, offset) * eager.tensor(w)).sum().backward()
        np.testing.assert_allclose(dv.grad.numpy(), tv.grad.numpy(), rtol=1e-12)


def test_a_write_through_the_result_reaches_the_base_as_torch():
    tb, db = torch.zeros(20), eager.zeros(20)
    for b in (tb, db):
        lib = torch if b is tb else eager
        lib.as_strided(b[5:15], (2, 2), (1, 2), 0).add_(1)      # reads outside the view
    np.testing.assert_array_equal(db.numpy(), tb.numpy())
    assert db[:4].sum().item() == 4.0


def test_a_new_tensor_is_its_own_storage():
    """A tensor no view op made (a kernel's result laid out transposed included) has storage
    offset 0 and as_strided reads its own elements row-major, as torch's new tensors."""
    a = np.arange(12.0).reshape(3, 4)
    d = eager.tensor(a) @ eager.eye(4, dtype=eager.float64)
    t = torch.tensor(a) @ torch.eye(4, dtype=torch.float64)
    assert d.storage_offset() == t.storage_offset() == 0
    np.testing.assert_array_equal(eager.as_strided(d, (3, 2), (1, 3)).numpy(),
                                  torch.as_strided(t, (3, 2), (1, 3)).numpy())


def test_compile_breaks_where_storage_is_read_and_agrees_otherwise():
    def window(v):
        return eager.as_strided(v, (2, 2), (1, 2), 0) * 2

    x = eager.arange(20.0)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = compile(window)(x[5:15])
    assert any("as_strided of a view" in str(w.message) for w in seen)
    np.testing.assert_array_equal(got.numpy(), window(x[5:15]).numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = compile(window)(x)       # a tensor of its own: traced, no break
    np.testing.assert_array_equal(got.numpy(), window(x).numpy())


def test_detach_keeps_the_storage_not_the_tape():
    import gc
    import weakref
    x = eager.randn(10, requires_grad=True)
    y = (x * 2)[3:]
    ref = weakref.ref(y)
    kept = y.detach()
    del y
    gc.collect()
    assert ref() is None              # the detached view does not hold its base's tape
    assert kept.storage_offset() == 3


def test_copies_and_pickles_of_a_view_do_not_carry_its_base():
    """A DataLoader worker pickles samples that are views of a whole dataset tensor: the
    pickle holds the sample's elements only, and a deepcopy or unpickled view is a tensor of
    its own (storage offset 0)."""
    import copy
    import pickle
    whole = eager.arange(1_000_000.0)
    row = whole[10:20]
    assert len(pickle.dumps(row)) < 2_000
    for other in (copy.deepcopy(row), pickle.loads(pickle.dumps(row))):
        np.testing.assert_array_equal(other.numpy(), row.numpy())
        assert other.storage_offset() == 0
    assert row.storage_offset() == 10

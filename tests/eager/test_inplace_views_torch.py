"""In-place changes through views, with autograd, against torch.

`y[..., :2] = y[..., :2].sigmoid()`, `boxes[:, 0] *= w`, `y[0] += y[1]`, `y.diagonal().zero_()`:
a generated matrix of programs (how the tensor is made, which view is written, which in-place
change, and whether the tensor or the view is used before or after the write), each run in
torch and in dualgrad (float64). Where torch runs one, dualgrad gives its values and gradients;
where torch raises (a value its backward saved was overwritten, a view of a leaf written),
dualgrad raises a RuntimeError too or, where its own gradient rule did not read the value
(its rules save other values than torch's: relu reads its input, torch's its result), gives
the gradient, which must then equal central finite differences of the program.

Cost: 7 bases x 11 views x 9 changes x 3 uses = 2,079 programs, and 7 bases x 6 indexes x 5
values x 3 assignment forms = 630, each a few small tensors (~15 s).
"""
import itertools

import numpy as np
import pytest

from dualgrad import eager

torch = pytest.importorskip("torch")

BASES = {
    "mul": lambda w: w * 1.5,
    "exp": lambda w: w.exp(),
    "relu": lambda w: w.relu(),
    "clone": lambda w: w.clone(),
    "tanh": lambda w: w.tanh(),
    "add": lambda w: w + w,
    "sigmoid": lambda w: w.sigmoid(),
}
VIEWS = {
    "row": lambda y: y[0],
    "col": lambda y: y[:, 1],
    "last2": lambda y: y[..., :2],
    "t": lambda y: y.t(),
    "diag": lambda y: y.diagonal(),
    "flat_slice": lambda y: y.view(-1)[2:5],
    "t_row": lambda y: y.transpose(0, 1)[1],
    "unsq": lambda y: y.unsqueeze(0)[0],
    "narrow": lambda y: y.narrow(1, 1, 2),
    "select": lambda y: y.select(1, 2),
    "step": lambda y: y[:, ::2],
}
CHANGES = {
    "mul_": lambda v, w: v.mul_(2.0),
    "add_w": lambda v, w: v.add_(w[0, 0] * 3),
    "zero_": lambda v, w: v.zero_(),
    "fill_": lambda v, w: v.fill_(0.25),
    "sigmoid_": lambda v, w: v.sigmoid_(),
    "clamp_": lambda v, w: v.clamp_(0.17, 0.77),
    "iadd_sq": lambda v, w: v.__iadd__(v * v),
    "imul_w": lambda v, w: v.__imul__(w[1, 1]),
    "copy_": lambda v, w: v.copy_((w.flatten()[:v.numel()] * 2).reshape(v.shape)),
}


def _program(base, view, change, use):
    def run(lib, w):
        y = BASES[base](w)
        before = y.sin().sum() if use == "base_before" else 0.0
        v = VIEWS[view](y)
        early = (v * v).sum() if use == "view_before" else 0.0
        CHANGES[change](v, w)
        after = (v.cos() * 2).sum() if use == "view_after" else 0.0
        return (y * y).sum() + before + early + after
    return run


USES = ("base_before", "view_before", "view_after")
PROGRAMS = list(itertools.product(BASES, VIEWS, CHANGES, USES))
W0 = np.array([[0.3, -0.7, 1.1, 0.4], [-0.2, 0.9, -1.3, 0.6], [0.8, -0.5, 0.1, -0.9]])


def _run(lib, fn):
    w = lib.tensor(W0.copy(), requires_grad=True)
    try:
        loss = fn(lib, w)
        loss.backward()
    except RuntimeError as e:
        return None, str(e)
    return float(loss.detach()), w.grad.numpy().copy()


def _value(fn, w0):
    with eager.no_grad():
        return float(fn(eager, eager.tensor(w0)))


def _finite_differences(fn, eps=1e-6):
    g = np.zeros_like(W0)
    for i in np.ndindex(W0.shape):
        hi, lo = W0.copy(), W0.copy()
        hi[i] += eps
        lo[i] -= eps
        g[i] = (_value(fn, hi) - _value(fn, lo)) / (2 * eps)
    return g


def _differs(fn):
    """Why dualgrad's run of fn differs from torch's ("" if it does not): where torch runs
    it, the same loss and gradient; where torch raises, a RuntimeError or the true gradient
    (central finite differences)."""
    want, want_g = _run(torch, fn)
    got, got_g = _run(eager, fn)
    if want is not None:
        if got is None:
            return f"torch runs it, dualgrad raised {got_g}"
        if not (np.isclose(got, want, rtol=1e-12, atol=1e-12)
                and np.allclose(got_g, want_g, rtol=1e-10, atol=1e-12)):
            return f"loss {got} vs torch {want}, grad\n{got_g}\nvs\n{want_g}"
    elif got is not None:
        fd = _finite_differences(fn)
        if not np.allclose(got_g, fd, rtol=1e-5, atol=1e-6):
            return f"torch raised; dualgrad's gradient\n{got_g}\nis not the true one\n{fd}"
    return ""


@pytest.mark.parametrize("base", list(BASES))
def test_in_place_changes_through_views_as_torch(base):
    bad = []
    for b, view, change, use in PROGRAMS:
        if b != base:
            continue
        why = _differs(_program(b, view, change, use))
        if why:
            bad.append(f"{b}/{view}/{change}/{use}: {why}")
    assert not bad, f"{len(bad)} programs differ:\n" + "\n".join(bad[:10])


INDEXES = {
    "row": lambda lib, y: 0,
    "col": lambda lib, y: (slice(None), 1),
    "last2": lambda lib, y: (Ellipsis, slice(None, 2)),
    "mask": lambda lib, y: y.detach() > 0.5,
    "rows": lambda lib, y: lib.tensor([0, 2]),
    "pair": lambda lib, y: (lib.tensor([0, 2]), lib.tensor([1, 3])),
}
VALUES = {
    "sigmoid_of_itself": lambda y, i, w: y[i].sigmoid(),
    "exp_times_anchor": lambda y, i, w: y[i].exp() * 2.5,
    "constant": lambda y, i, w: 0.5,
    "from_w": lambda y, i, w: (w * 3)[i],
    "scaled_itself": lambda y, i, w: y[i] * w[1, 2],
}


@pytest.mark.parametrize("base", list(BASES))
def test_assigning_into_part_of_a_tensor_as_torch(base):
    """`y[i] = f(y[i])` (YOLO's box decoding), and the augmented `y[i] *= s` / `y[i] += v`."""
    bad = []
    for index, value, aug in itertools.product(INDEXES, VALUES, ("set", "imul", "iadd")):
        def fn(lib, w, index=index, value=value, aug=aug):
            y = BASES[base](w)
            i = INDEXES[index](lib, y)
            if aug == "set":
                y[i] = VALUES[value](y, i, w)
            elif aug == "imul":
                y[i] *= VALUES[value](y, i, w)
            else:
                y[i] += VALUES[value](y, i, w)
            return (y * y).sum()
        why = _differs(fn)
        if why:
            bad.append(f"{base}/{index}/{value}/{aug}: {why}")
    assert not bad, f"{len(bad)} programs differ:\n" + "\n".join(bad[:10])


def _exp_then_data_write(lib, w):
    y = w.exp()
    y.data.mul_(2)            # torch: .data has a version counter of its own: not checked
    return y.sum()


def _exp_then_detach_write(lib, w):
    y = w.exp()
    y.detach().zero_()        # torch: detach() shares the counter: backward raises
    return y.sum()


def _write_a_copy_of_a_view(lib, w):
    y = w * 1
    y.T.contiguous().mul_(2)  # a copy: y is untouched
    return (y * y).sum()


def _chunks_written(lib, w):
    y = w * 1
    a, b = y.chunk(2, dim=1)
    a.mul_(3)
    b.add_(a)                 # torch refuses (a multi-output view); dualgrad's must be true
    return (y * y).sum()


def _view_of_data_written(lib, w):
    y = w.sigmoid()
    y.data[0].fill_(0.5)
    return (y * 2).sum()


@pytest.mark.parametrize("fn", [_exp_then_data_write, _exp_then_detach_write,
                                _write_a_copy_of_a_view, _chunks_written, _view_of_data_written])
def test_data_detach_copies_and_chunks_as_torch(fn):
    assert _differs(fn) == ""


def test_a_view_of_a_leaf_written_in_place_raises_torchs_error():
    for lib in (torch, eager):
        w = lib.ones(3, 4, requires_grad=True)
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
            w[0].mul_(2)


def test_overlapping_views_written_in_place_raise():
    for lib in (torch, eager):
        w = lib.ones(4, requires_grad=True)
        y = w * 1
        with pytest.raises(RuntimeError, match="single memory location"):
            y.unsqueeze(0).expand(3, 4).mul_(2) if lib is torch else \
                y.unfold(0, 2, 1).mul_(2)

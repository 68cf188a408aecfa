"""torch's op database, through the method and in-place forms: `x.name(...)` and `x.name_(...)`.

test_opdb.py calls each entry's function; programs call the methods as often (`x.add_(y)`,
`x.clamp_(0, 1)`, `mask.logical_not_()`). For every entry with a method or in-place variant
that dualgrad's Tensor has under the same name, on the entry's first samples in bool, int64,
float32 and float64 (the dtypes torch supports for it), both libraries are called on their own
copy of the sample:
- both raise (an error type of the same family: torch's RuntimeError for a result dtype an
  in-place write cannot hold is dualgrad's RuntimeError too), or
- both return; the method's result equals torch's (shape, dtype, values at torch.testing's
  tolerances); the in-place form returns self, and self then holds torch's values in its
  own dtype.
Caps: the first 2 samples per entry and dtype, 4 dtypes (about 3,000 calls per library, a
few seconds); random entries compare shapes and dtypes only.
"""
import pytest
import torch

from dualgrad import eager
from tests.eager import opdb_harness as H

DTYPES = [torch.bool, torch.int64, torch.float32, torch.float64]
CAP = 2
# NOTE: the known difference, as a row that fails once the two agree: torch's addbmm_ resizes
# a self of another shape to the product's (its out= kernel resizes); dualgrad's in-place
# forms never change self's shape, and raise torch's broadcast error as add_ does
KNOWN = {("addbmm", "addbmm_", 1): "torch resizes self, dualgrad raises"}


def _variant_name(v):
    return getattr(v, "__name__", None)


def _cases(kind):
    out = []
    for op in H.OP_DB:
        variant = getattr(op, f"{kind}_variant", None)
        name = _variant_name(variant)
        if variant is None or not name or name.startswith("<") or \
                not hasattr(eager.Tensor, name):
            continue
        sup = set(op.supported_dtypes("cpu"))
        out += [(H.entry_id(op), name, dt) for dt in DTYPES if dt in sup]
    return out


_BY_ID = {H.entry_id(op): op for op in H.OP_DB}


def _detached(v):
    if isinstance(v, torch.Tensor):
        return v.detach().clone()
    if isinstance(v, (list, tuple)):
        return type(v)(_detached(x) for x in v)
    if isinstance(v, dict):
        return {k: _detached(x) for k, x in v.items()}
    return v


def _run(fn):
    try:
        return fn(), None
    except Exception as e:     # noqa: BLE001 - compared with the other library's below
        return None, e


def _same_family(ours, theirs):
    """dualgrad's error stands for torch's: the same class, or a subclass of it (ShapeError
    is a RuntimeError and a ValueError, as torch's shape errors are either)."""
    return isinstance(ours, type(theirs)) or (
        isinstance(theirs, (RuntimeError, ValueError, IndexError, TypeError)) and
        isinstance(ours, (RuntimeError, ValueError, IndexError, TypeError)))


def _check(entry, name, dtype, kind):
    op = _BY_ID[entry]
    problems = []
    for i, s in enumerate(H.samples(op, dtype, cap=CAP)):
        x, args, kwargs = _detached(s.input), _detached(s.args), _detached(s.kwargs)
        if not isinstance(x, torch.Tensor):
            continue
        leaves = []
        try:    # NOTE: converted before torch writes into x
            ox = H.to_eager(x.clone(), leaves)
            oargs, okw = H.to_eager(_detached(s.args), leaves), H.to_eager(_detached(s.kwargs),
                                                                           leaves)
        except H.Unconvertible:
            continue
        ref, ref_err = _run(lambda: getattr(x, name)(*args, **kwargs))
        ours, our_err = _run(lambda: getattr(ox, name)(*oargs, **okw))
        where = f"{entry} x.{name} sample {i} {dtype}"
        if (entry, name, i) in KNOWN:
            if ref_err is None and our_err is not None:
                continue
            problems.append(f"{where}: KNOWN says {KNOWN[entry, name, i]}, no longer so")
        if ref_err is not None or our_err is not None:
            if ref_err is None:
                problems.append(f"{where}: torch returns, dualgrad raises {our_err!r}")
            elif our_err is None:
                problems.append(f"{where}: torch raises {ref_err!r}, dualgrad returns")
            elif not _same_family(our_err, ref_err):
                problems.append(f"{where}: dualgrad raises {our_err!r}, torch {ref_err!r}")
            continue
        values = not H.is_random(op, s, ref)
        tols = H.reference_tolerances(op)
        if kind == "inplace":
            if ours is not ox:
                problems.append(f"{where}: the in-place form does not return self")
            problems += H.compare_values(op, s, ox, x, f"{where} self", values, tols)
        else:
            problems += H.compare_values(op, s, ours, ref, where, values, tols)
    return problems


@pytest.mark.parametrize("entry,name,dtype", _cases("inplace"),
                         ids=lambda v: str(v).replace("torch.", ""))
def test_inplace_variant_as_torch(entry, name, dtype):
    problems = _check(entry, name, dtype, "inplace")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("entry,name,dtype", _cases("method"),
                         ids=lambda v: str(v).replace("torch.", ""))
def test_method_variant_as_torch(entry, name, dtype):
    problems = _check(entry, name, dtype, "method")
    assert not problems, "\n".join(problems)


# NOTE: the variants torch's database has that dualgrad's Tensor does not (an AttributeError
# names them); exact, so an addition on either side shows up here
NOT_PROVIDED = {
    "as_strided_": "restriding a tensor's own storage in place",
    "chalf": "complex32 (torch's complex of float16) is not a dtype here",
    "stft": "not provided (torch.fft is)", "istft": "not provided (torch.fft is)",
    "geqrf": "LAPACK's Householder form (qr is provided)",
    "ormqr": "LAPACK's Householder form (qr is provided)",
    "lu": "LU factorisation (linalg.lu_factor is not provided either)",
    "lu_solve": "LU factorisation", "hash_tensor": "torch's tensor hashing",
    "to_sparse": "sparse layouts",
}


def test_every_variant_is_provided_or_listed():
    absent = set()
    for op in H.OP_DB:
        for kind in ("inplace", "method"):
            name = _variant_name(getattr(op, f"{kind}_variant", None))
            if name and not name.startswith("<") and not hasattr(eager.Tensor, name):
                absent.add(name)
    assert absent == set(NOT_PROVIDED), sorted(absent ^ set(NOT_PROVIDED))

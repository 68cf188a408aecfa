"""`Op.reads` says which values an op's gradient rule reads (torch's saved tensors): eager's
version check raises when one of those was written in place after the op used it, and lets the
others be written (`y[:, :2] = y[:, :2].sigmoid()`). A wrong declaration would let a gradient
read a value that changed, so every declaration (and a view's, which reads neither input 0 nor
the result) is checked here on the op's own samples: the rule's results do not change when an
input or the result it does not read holds NaN instead.

Cost: one rule call per sample and unread value, well under a second.
"""
import numpy as np
import pytest

from dualgrad import eager, ops
from tests.opinfo import params


def _declares(op):
    return op.vjp is not None and (op.reads is not None or op.view)


CASES = params("ok", lambda c: c.name in ops.REGISTRY and c.sample.grad
               and _declares(ops.REGISTRY[c.name]))


def _grads(op, args, out, attrs, needs=None):
    """The rule's results on eager tensors (it gives raw arrays, constants, no gradient)."""
    floats = tuple(isinstance(a, np.ndarray) and a.dtype.kind == "f" for a in args)
    needs = floats if needs is None else needs
    vals = [eager.tensor(a) if f else a for a, f in zip(args, floats)]
    with eager.no_grad():
        got = op.vjp(eager.ones_like(eager.tensor(out)), *vals, out=eager.tensor(out),
                     needs=needs, **attrs)
    return [None if g is None or not n else np.asarray(g._array if hasattr(g, "_array") else g)
            for g, n in zip(got, needs)]


def _patterns(op, args):
    """The `needs` to check under: all float inputs wanting a gradient, and for a rule whose
    reads depend on them, each float input alone."""
    floats = tuple(isinstance(a, np.ndarray) and a.dtype.kind == "f" for a in args)
    out = [floats]
    if callable(op.reads):
        out += [tuple(i == k for i in range(len(args))) for k, f in enumerate(floats) if f]
    return out


def test_the_declaring_ops_have_samples():
    named = {p.values[0].name for p in CASES}
    missing = sorted(n for n, op in ops.REGISTRY.items() if op.reads is not None
                     and n not in named)
    assert not missing, f"ops declaring `reads` without a sample to check it on: {missing}"


@pytest.mark.parametrize("case", CASES)
def test_a_value_the_rule_does_not_read_can_change(case):
    op, attrs = ops.REGISTRY[case.name], case.sample.attrs
    args = case.args(np.float64)
    out = np.asarray(op.kernel(*args, **attrs))
    for needs in _patterns(op, args):
        want = _grads(op, args, out, attrs, needs)
        for k, a in enumerate(args):
            if isinstance(a, np.ndarray) and a.dtype.kind == "f" and \
                    not op.reads_input(k, needs):
                other = list(args)
                other[k] = np.full_like(a, np.nan)
                got = _grads(op, other, out, attrs, needs)
                for w, g in zip(want, got):
                    assert (w is None) == (g is None)
                    if w is not None:
                        np.testing.assert_array_equal(
                            g, w, err_msg=f"{case.id}: input {k} is read (needs {needs})")
        if out.dtype.kind == "f" and not op.reads_out(needs):
            got = _grads(op, args, np.full_like(out, np.nan), attrs, needs)
            for w, g in zip(want, got):
                if w is not None:
                    np.testing.assert_array_equal(
                        g, w, err_msg=f"{case.id}: the result is read (needs {needs})")

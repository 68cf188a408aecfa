"""What a Tensor operator does with an operand that is not a tensor or a number, against torch.

torch's operators return NotImplemented for such an operand, so Python raises TypeError
(`t + "a"`, `t < None`), asks the operand's reflected method (a user class's `__radd__`),
or, for == and !=, compares identity: `t == None` is False and `t == [1., 1.]` is False,
not an elementwise tensor. dualgrad computed `t == None` elementwise and raised a
KernelError for `t == "a"` (so `t in ["a", t]` raised); each case here is run on both.

Left out: a NumPy array of dtype object, which every dualgrad operator refuses with torch's
"can't convert np.ndarray of type numpy.object_" TypeError, while torch's outcome depends on
the array's contents (== is False, + raises one of three TypeErrors).
"""
import operator

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from dualgrad import eager  # noqa: E402


class Reflects:
    """A user's object that knows how to combine with a tensor from the right."""

    def __radd__(self, other):
        return "reflected add"

    def __rmul__(self, other):
        return "reflected mul"

    def __eq__(self, other):
        return "its own eq"

    __hash__ = object.__hash__


OPERATORS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "@": operator.matmul,
    "&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift,
    ">>": operator.rshift, "==": operator.eq, "!=": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}
OPERANDS = {
    "str": lambda: "a", "None": lambda: None, "list": lambda: [1, 1], "tuple": lambda: (1, 1),
    "object": object, "dict": dict, "user class": Reflects,
}


def _outcome(lib, sym, name, flip):
    x = lib.tensor([1, 2])     # int64: every operator above is defined on it with a tensor
    other = OPERANDS[name]()
    try:
        out = OPERATORS[sym](other, x) if flip else OPERATORS[sym](x, other)
    except Exception as e:  # noqa: BLE001 - the outcome compared is the exception's type
        return type(e).__name__
    if isinstance(out, (torch.Tensor, eager.Tensor)):
        return ("tensor", str(out.dtype).split(".")[-1], out.tolist())
    return out


@pytest.mark.parametrize("flip", [False, True], ids=["tensor first", "tensor second"])
@pytest.mark.parametrize("name", list(OPERANDS))
@pytest.mark.parametrize("sym", list(OPERATORS))
def test_operator_with_a_foreign_operand_as_torch(sym, name, flip):
    assert _outcome(eager, sym, name, flip) == _outcome(torch, sym, name, flip)


def test_membership_and_none_checks_read_as_in_torch():
    t = eager.ones(3)
    assert t in ["a", t]
    assert (t == None) is False and (t != None) is True  # noqa: E711 - the point of the test
    assert (eager.tensor([1.0, 2.0]) + np.float32(1)).tolist() == [2.0, 3.0]
    with pytest.raises(TypeError, match="numpy.object_"):
        eager.tensor([1, 2]) == np.array([1, "a"], dtype=object)
    assert (eager.tensor([1.0, 2.0]) == np.array([1.0, 0.0])).tolist() == [True, False]


@pytest.mark.parametrize("sym", list(OPERATORS))
@pytest.mark.parametrize("name", list(OPERANDS))
def test_compile_traces_the_same_operand_rule(sym, name):
    """Inside compile() the traced tensor's operators follow the same rule: a branch on
    `t == None` or a try/except TypeError takes the path eager takes."""
    from dualgrad import compiler

    def program(t):
        other = OPERANDS[name]()
        try:
            out = OPERATORS[sym](t, other)
        except TypeError:
            return t * 0 - 1
        if isinstance(out, bool):
            return t * 0 + (2 if out else 3)
        return t * 0 + 5
    x = eager.tensor([1, 2])
    assert compiler.compile(program)(x).tolist() == program(x).tolist()

"""The scalar vocabulary: what an elementwise op's `scalar` form, and a reduction's `reduce`
field, may be written in.

An elementwise op says what it computes for one element as an expression over its inputs
`{0}`, `{1}`, … using only these: the operators `+ - * / **`, unary `-`, one comparison
(`< <= > >= == !=`), numeric literals (weak, like Python scalars in NumPy: `0.5 * {0}`
stays float32), and the functions in `FUNCTIONS`. The fusion code generator (compiler/)
implements exactly this vocabulary, so an op written in it is fused with no change outside
ops/:

>>> from dualgrad.ops.scalar import check_form
>>> check_form("where({0} > 0, {0}, 0.1 * {0})", 1)
>>> check_form("relu({0})", 1)  # doctest: +ELLIPSIS
Traceback (most recent call last):
  ...
ValueError: scalar form 'relu({0})': unknown function 'relu' (the vocabulary: abs, cos, ...)
"""
from __future__ import annotations

import ast
import re

DTYPES = ("float32", "float64", "int32", "int64", "bool")

# name -> number of arguments
FUNCTIONS = {
    "exp": 1, "log": 1, "log1p": 1, "sqrt": 1, "tanh": 1, "erf": 1, "sin": 1, "cos": 1,
    "abs": 1, "maximum": 2, "minimum": 2, "where": 3,
    **{f"cast_{d}": 1 for d in DTYPES},
}
REDUCTIONS = ("sum", "max", "min")   # what a reduction's `reduce` field may be

_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
_CMPOPS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
_ARG = re.compile(r"\{(\d+)\}")


def parse_form(form: str):
    """The form as a Python expression tree, inputs named `_a0`, `_a1`, …"""
    src = _ARG.sub(lambda m: f"_a{m.group(1)}", form)
    try:
        return ast.parse(src, mode="eval").body
    except SyntaxError as e:
        raise ValueError(f"scalar form {form!r}: cannot parse it: {e.msg}") from None


def check_form(form: str, n_inputs: int | None = None) -> None:
    """Raise ValueError naming what in `form` is outside the vocabulary (or reads an input
    beyond `n_inputs`, when given)."""
    def fail(why):
        raise ValueError(f"scalar form {form!r}: {why}")

    def visit(node):
        if isinstance(node, ast.Name):
            m = re.fullmatch(r"_a(\d+)", node.id)
            if not m or n_inputs is not None and int(m.group(1)) >= n_inputs:
                fail(f"unknown name {node.id!r} (inputs are {{0}}..{{{n_inputs - 1}}})")
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                fail(f"only numeric literals are allowed, got {node.value!r}")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, _BINOPS):
            visit(node.left)
            visit(node.right)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            visit(node.operand)
        elif isinstance(node, ast.Compare):
            if len(node.ops) != 1 or not isinstance(node.ops[0], _CMPOPS):
                fail("only single comparisons are allowed")
            visit(node.left)
            visit(node.comparators[0])
        elif isinstance(node, ast.Call):
            name = getattr(node.func, "id", None)
            if name not in FUNCTIONS:
                fail(f"unknown function {name or ast.unparse(node.func)!r} (the vocabulary: "
                     f"{', '.join(sorted(n for n in FUNCTIONS if not n.startswith('cast_')))}"
                     f", cast_<dtype>)")
            if node.keywords or len(node.args) != FUNCTIONS[name]:
                fail(f"{name} takes {FUNCTIONS[name]} positional argument(s)")
            for a in node.args:
                visit(a)
        else:
            fail(f"unsupported syntax {type(node).__name__}")

    visit(parse_form(form))

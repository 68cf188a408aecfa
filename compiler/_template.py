"""Translate one elementwise template ("tanh(({0} * {1}))") into typed numba statements.

The op library's scalar forms use the small vocabulary of `dualgrad.ops.scalar` (operators,
weak numeric literals, `FUNCTIONS`): this module implements exactly that vocabulary and
knows no op by name. A template is parsed with `ast`, checked against the vocabulary, and
lowered to three-address code: one local per sub-expression, each with a known dtype, with
explicit casts wherever NumPy's promotion and numba's differ (numba widens int32 arithmetic
to int64 and would compute `float32 * 0.5` in float64). A literal takes the dtype NumPy 2
gives a Python scalar beside the other operands (weak: `0.5 * x` stays float32).

    >>> lines = []
    >>> var, dt = lower_template("tanh({0})", [("x", "float32")], {}, "float32", "t", lines)
    >>> var, dt, lines
    ('t0', 'float32', ['t0 = tanh_f32(x)'])
"""
from __future__ import annotations

import ast
import math
import re

import numpy as np

from dualgrad.ops.scalar import DTYPES, FUNCTIONS, parse_form

FLOATS = ("float32", "float64")
INTS = ("int32", "int64")
WEAK = "weak"   # the dtype of a literal until an operation beside typed operands decides it

TEMPLATE_FUNCTIONS = FUNCTIONS
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


class TemplateError(ValueError):
    """The template uses something outside the fusion vocabulary (a one-line reason)."""


def promote(*vals) -> str:
    """NumPy 2 promotion of (variable, dtype) pairs ("int32", "float32" -> "float64"); a
    literal (dtype WEAK) promotes as a Python scalar does."""
    return np.result_type(*[v if d == WEAK else np.dtype(d) for v, d in vals]).name


def to_float(dt: str) -> str:
    """The float dtype a transcendental of `dt` computes in (NumPy: int -> float64)."""
    return dt if dt in FLOATS else ("float32" if dt == "bool" else "float64")


def np_ctor(dt: str) -> str:
    return "np.bool_" if dt == "bool" else f"np.{dt}"


def typed_literal(value, dt: str) -> str:
    """Source for a constant of dtype `dt`: np.float32(0.5), np.int32(3), np.bool_(True)."""
    if dt == "bool":
        return f"np.bool_({bool(value)})"
    if dt in INTS:
        return f"np.{dt}({int(value)})"
    v = float(value)
    if math.isnan(v):
        return f"np.{dt}(np.nan)"
    if math.isinf(v):
        return f"np.{dt}({'-' if v < 0 else ''}np.inf)"
    return f"np.{dt}({v!r})"


def cast(expr, src: str, dst: str) -> str:
    if src == WEAK:
        return typed_literal(expr, dst)
    if src == dst:
        return expr
    if dst == "bool":
        return f"({expr} != {typed_literal(0, src)})"
    return f"{np_ctor(dst)}({expr})"


def lower_template(template, args, consts, result_dtype, prefix, lines):
    """Append statements computing `template` to `lines`; return (variable, dtype).

    args: [(variable, dtype)] for {0}, {1}, ...; consts: {arg position: value} for the args
    that are constants (used to expand x ** 2 etc.); the result is cast to `result_dtype`.
    The outermost operation computes in `result_dtype` (the node's dtype, decided by the op
    library's promotion rules, which treat Python scalars as weak) unless it is a comparison.
    """
    try:
        tree = parse_form(template)
    except ValueError as e:
        raise TemplateError(str(e)) from None
    lw = _Lowering(args, consts, prefix, lines, template)
    var, dt = lw.lower(tree, hint=result_dtype)
    if dt != result_dtype:
        var = lw.emit(cast(var, dt, result_dtype), result_dtype)
    return var, result_dtype


class _Lowering:
    def __init__(self, args, consts, prefix, lines, template):
        self.args, self.consts, self.prefix = args, consts, prefix
        self.lines, self.template, self.n = lines, template, 0

    def fail(self, why):
        raise TemplateError(f"template {self.template!r}: {why}")

    def emit(self, expr, dt):
        var = f"{self.prefix}{self.n}"
        self.n += 1
        self.lines.append(f"{var} = {expr}")
        return var, dt

    def lower(self, node, hint=None):
        """Lower an AST node. `hint` is the computing dtype for the outermost operation."""
        if isinstance(node, ast.Name):
            m = re.fullmatch(r"_a(\d+)", node.id)
            if not m or int(m.group(1)) >= len(self.args):
                self.fail(f"unknown name {node.id!r}")
            return self.args[int(m.group(1))]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return self.binop(node, hint)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return self.unary(node, hint)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.Call):
            return self.call(node, hint)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                self.fail(f"only numeric literals are allowed, got {node.value!r}")
            return node.value, WEAK
        self.fail(f"unsupported syntax {type(node).__name__}")

    # -- operators ----------------------------------------------------------------------------
    def _operands(self, nodes, hint, float_only=False):
        vals = [self.lower(n) for n in nodes]
        dt = hint if hint in DTYPES else promote(*vals)
        if float_only:
            dt = to_float(dt)
        return [cast(v, d, dt) for v, d in vals], dt

    def binop(self, node, hint):
        op = _BINOPS[type(node.op)]
        if op == "**":
            return self.power(node, hint)
        if op == "/":
            (a, b), dt = self._operands([node.left, node.right], hint, float_only=True)
            return self.emit(f"{a} / {b}", dt)
        (a, b), dt = self._operands([node.left, node.right], hint)
        if dt == "bool":
            if op == "-":
                self.fail("boolean subtract is not supported (NumPy raises too)")
            return self.emit(f"{a} {'|' if op == '+' else '&'} {b}", dt)
        return self.emit(self.wrap(f"{a} {op} {b}", dt), dt)

    @staticmethod
    def wrap(expr, dt):
        # NOTE: numba computes int32 arithmetic in int64; cast back for NumPy's wrap-around.
        return f"np.int32({expr})" if dt == "int32" else expr

    def power(self, node, hint):
        base, bdt = self.lower(node.left)
        expo, edt = self.lower(node.right)
        dt = hint if hint in DTYPES else promote((base, bdt), (expo, edt))
        if dt == "bool":
            self.fail("boolean power is not supported")
        b = cast(base, bdt, dt)
        k = self._const_exponent(node.right)
        if dt in INTS and not self._nonnegative(node.right):
            # NOTE: NumPy raises for a negative integer exponent; numba's loop would return
            # garbage. Left to the op's own kernel, the error is the same fused or not.
            self.fail("an integer power needs a constant exponent >= 0")
        if k in (2, 3, 4) and b != base:
            b, _ = self.emit(b, dt)  # cast once, multiply the cast value
        if k == 0:
            return self.emit(typed_literal(1, dt), dt)
        if k == 1:
            return self.emit(b, dt)
        if k in (2, 3):
            return self.emit(self.wrap(" * ".join([b] * k), dt), dt)
        if k == 4:
            sq, _ = self.emit(self.wrap(f"{b} * {b}", dt), dt)
            return self.emit(self.wrap(f"{sq} * {sq}", dt), dt)
        if k == 0.5 and dt in FLOATS:
            return self.emit(f"math.sqrt({b})", dt)
        if k == -1 and dt in FLOATS:
            return self.emit(f"{typed_literal(1, dt)} / {b}", dt)
        return self.emit(self.wrap(f"{b} ** {cast(expo, edt, dt)}", dt), dt)

    def _const_exponent(self, node):
        if isinstance(node, ast.Constant):
            return self._small(node.value)
        if not isinstance(node, ast.Name):
            return None
        pos = int(node.id[2:])
        if pos not in self.consts:
            return None
        return self._small(self.consts[pos])

    def _nonnegative(self, node):
        if isinstance(node, ast.Constant):
            return node.value >= 0
        pos = int(node.id[2:]) if isinstance(node, ast.Name) else None
        return pos in self.consts and self.consts[pos] >= 0

    @staticmethod
    def _small(v):
        v = float(v)
        for k in (0, 1, 2, 3, 4, 0.5, -1):
            if v == k:
                return k
        return None

    def unary(self, node, hint):
        if isinstance(node.operand, ast.Constant):   # -1: still a (weak) literal
            v, dt = self.lower(node.operand)
            return (-v if isinstance(node.op, ast.USub) else v), dt
        (a,), dt = self._operands([node.operand], hint)
        if isinstance(node.op, ast.UAdd):
            return self.emit(a, dt)
        if dt == "bool":
            self.fail("boolean negative is not supported (NumPy raises too)")
        return self.emit(self.wrap(f"-{a}", dt), dt)

    def compare(self, node):
        if len(node.ops) != 1 or type(node.ops[0]) not in _CMPOPS:
            self.fail("only single comparisons are supported")
        (a, b), _ = self._operands([node.left, node.comparators[0]], None)
        return self.emit(f"{a} {_CMPOPS[type(node.ops[0])]} {b}", "bool")

    # -- functions ----------------------------------------------------------------------------
    def call(self, node, hint):
        if not isinstance(node.func, ast.Name) or node.func.id not in TEMPLATE_FUNCTIONS:
            name = getattr(node.func, "id", ast.unparse(node.func))
            self.fail(f"unknown function {name!r}")
        name = node.func.id
        if node.keywords or len(node.args) != TEMPLATE_FUNCTIONS[name]:
            self.fail(f"{name} takes {TEMPLATE_FUNCTIONS[name]} positional argument(s)")
        if name.startswith("cast_"):
            a, dt = self.lower(node.args[0])
            to = name[5:]
            return self.emit(cast(a, dt, to), to)
        if name == "where":
            c, cdt = self.lower(node.args[0])
            (a, b), dt = self._operands(node.args[1:], hint)
            return self.emit(f"{a} if {cast(c, cdt, 'bool')} else {b}", dt)
        if name in ("maximum", "minimum"):
            (a, b), dt = self._operands(node.args, hint)
            if dt in FLOATS:
                return self.emit(f"f{name}({a}, {b})", dt)
            op = ">" if name == "maximum" else "<"
            return self.emit(f"{a} if {a} {op} {b} else {b}", dt)
        return getattr(self, f"fn_{name}")(node.args[0], hint)

    def _float_arg(self, arg, hint):
        (a,), dt = self._operands([arg], hint if hint in FLOATS else None, float_only=True)
        return a, dt

    def fn_exp(self, arg, hint):
        a, dt = self._float_arg(arg, hint)
        return self.emit(f"exp_f32({a})" if dt == "float32" else f"math.exp({a})", dt)

    def fn_log(self, arg, hint):
        a, dt = self._float_arg(arg, hint)
        return self.emit(f"log_f32({a})" if dt == "float32" else f"math.log({a})", dt)

    def fn_log1p(self, arg, hint):
        a, dt = self._float_arg(arg, hint)
        return self.emit(f"math.log1p({a})", dt)

    def fn_sqrt(self, arg, hint):
        a, dt = self._float_arg(arg, hint)
        return self.emit(f"math.sqrt({a})", dt)

    def fn_tanh(self, arg, hint):
        a, dt = self._float_arg(arg, hint)
        return self.emit(f"tanh_f32({a})" if dt == "float32" else f"np.tanh({a})", dt)

    def fn_erf(self, arg, hint):
        a, dt = self._float_arg(arg, hint)
        return self.emit(f"erf_f32({a})" if dt == "float32" else f"math.erf({a})", dt)

    def fn_sin(self, arg, hint):
        a, dt = self._float_arg(arg, hint)
        return self.emit(f"math.sin({a})", dt)

    def fn_cos(self, arg, hint):
        a, dt = self._float_arg(arg, hint)
        return self.emit(f"math.cos({a})", dt)

    def fn_abs(self, arg, hint):
        (a,), dt = self._operands([arg], hint)
        return self.emit(a if dt == "bool" else self.wrap(f"abs({a})", dt), dt)

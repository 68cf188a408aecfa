"""Symbolic dims: a dim that is a named unknown (`N`), with integer arithmetic on it.

A `Dim` is an integer-valued linear form `c + a1*s1 + a2*s2 + …` over atoms: named symbols
(`Dim("N")`) and opaque terms (`N//3`, `N*M`) that arithmetic could not keep linear. Shape
rules run on it unchanged: `N*64 // 32` is `N*2`, `N == N` holds, `N != 32` holds (a symbol
is equal to no constant: a rule that needs it equal has found a bug, and `solved` says what
the symbol would have to be). Every symbol is taken to be at least 2 (torch.export assumes
the same of a dynamic dim), so `N == 1` is False and broadcasting never stretches it.
Reading a number out of a symbol (`int(N)`, `range(N)`) raises `SymbolicValueError`.

>>> from dualgrad.ops.symbolic import Dim
>>> N = Dim("N")
>>> N * 8, N * 64 // 32, N - 1, N // 2, (N * 8 == 8 * N), N == 32
(N*8, N*2, N - 1, N//2, True, False)
"""
from __future__ import annotations

import math
from fractions import Fraction

__all__ = ["Dim", "SymbolicValueError", "is_symbolic", "as_dim", "solved", "symbols", "fixing"]

_MIN = 2   # every symbol is at least this (0 and 1 would make broadcasting ambiguous)


class SymbolicValueError(TypeError):
    """Python needs a number where a dim is symbolic (`int(N)`, `range(N)`, `if N > 5`)."""


class Dim:
    """A symbolic dim; see the module docstring. `Dim("batch")` is a new symbol."""
    __slots__ = ("terms", "const")

    def __init__(self, name: str):
        if not isinstance(name, str) or not name:
            raise TypeError(f"Dim(name): name must be a non-empty string, got {name!r}")
        self.terms = ((name, 1),)
        self.const = 0

    # -- construction -----------------------------------------------------------------------
    @staticmethod
    def _make(terms: dict, const: int):
        terms = tuple(sorted((a, c) for a, c in terms.items() if c))
        if not terms:
            return const
        d = object.__new__(Dim)
        d.terms, d.const = terms, const
        return d

    def _parts(self):
        return dict(self.terms), self.const

    @property
    def name(self) -> str:
        return str(self)

    def is_symbol(self) -> bool:
        """A bare symbol (`N`), not an expression of one (`N*8`, `N - 1`)."""
        return self.const == 0 and len(self.terms) == 1 and self.terms[0][1] == 1 \
            and not _opaque(self.terms[0][0])

    # -- arithmetic ----------------------------------------------------------------------------
    def __add__(self, other):
        if isinstance(other, Dim):
            t, c = self._parts()
            for a, k in other.terms:
                t[a] = t.get(a, 0) + k
            return Dim._make(t, c + other.const)
        if _is_int(other):
            return Dim._make(dict(self.terms), self.const + int(other))
        return NotImplemented

    __radd__ = __add__

    def __neg__(self):
        return Dim._make({a: -k for a, k in self.terms}, -self.const)

    def __pos__(self):
        return self

    def __sub__(self, other):
        if not (isinstance(other, Dim) or _is_int(other)):
            return NotImplemented
        return self + (-other)

    def __rsub__(self, other):
        if not _is_int(other):
            return NotImplemented
        return (-self) + other

    def __mul__(self, other):
        if _is_int(other):
            k = int(other)
            return Dim._make({a: c * k for a, c in self.terms}, self.const * k)
        if isinstance(other, Dim):
            return Dim._make({f"({self})*({other})": 1}, 0)
        return NotImplemented

    __rmul__ = __mul__

    def __floordiv__(self, other):
        if not _is_int(other):
            if isinstance(other, Dim):
                k = _ratio(self, other)
                return k if k is not None else Dim._make({f"({self})//({other})": 1}, 0)
            return NotImplemented
        k = int(other)
        if k == 0:
            raise ZeroDivisionError(f"{self} // 0")
        if k == 1:
            return self
        if all(c % k == 0 for _, c in self.terms) and self.const % k == 0:
            return Dim._make({a: c // k for a, c in self.terms}, self.const // k)
        g = math.gcd(k, self.const, *[c for _, c in self.terms])
        if g > 1:    # NOTE: (N*128)//512 is N//4
            return Dim._make({a: c // g for a, c in self.terms}, self.const // g) // (k // g)
        return Dim._make({f"{_paren(self)}//{k}": 1}, 0)

    def __rfloordiv__(self, other):
        if not _is_int(other):
            return NotImplemented
        return Dim._make({f"{other}//{_paren(self)}": 1}, 0)

    def __mod__(self, other):
        if not _is_int(other):
            raise SymbolicValueError(f"{self} % {other}: the remainder of a symbolic dim by a "
                                     f"symbolic one is not known")
        k = int(other)
        if all(c % k == 0 for _, c in self.terms):
            return self.const % k
        raise SymbolicValueError(f"{self} % {k} depends on the value of {_names(self)}")

    def __truediv__(self, other):
        if _is_int(other) and int(other) and self // other is not None:
            q = self // other
            if isinstance(q, int) or not _opaque(q.terms[0][0]):
                return q
        raise SymbolicValueError(f"{self} / {other}: true division of a symbolic dim gives no "
                                 f"known number")

    def __pow__(self, other):
        raise SymbolicValueError(f"{self} ** {other}: a power of a symbolic dim is not known")

    # -- comparison ----------------------------------------------------------------------------
    def __eq__(self, other):
        if isinstance(other, Dim):
            return self.terms == other.terms and self.const == other.const
        if _is_int(other):
            return False
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash((self.terms, self.const))

    def _compare(self, other, op):
        if not (_is_int(other) or isinstance(other, Dim)):
            return NotImplemented
        lo, hi = (self - other)._bounds() if isinstance(self - other, Dim) else (
            self - other, self - other)
        verdict = op(lo, hi)
        if verdict is None:
            raise SymbolicValueError(f"whether {self} {op.__doc__} {other} depends on the value "
                                     f"of {_names(self)}")
        return verdict

    def __lt__(self, other):
        return self._compare(other, _LT)

    def __le__(self, other):
        return self._compare(other, _LE)

    def __gt__(self, other):
        return self._compare(other, _GT)

    def __ge__(self, other):
        return self._compare(other, _GE)

    def _bounds(self):
        lo, hi = Fraction(self.const), Fraction(self.const)
        for a, c in self.terms:
            low = 0 if _opaque(a) else _MIN
            if c > 0:
                lo, hi = lo + c * low, float("inf")
            else:
                lo, hi = float("-inf"), hi + c * low
        return lo, hi

    # -- what a symbol cannot give -----------------------------------------------------------
    def __bool__(self):
        return True     # NOTE: every symbol is >= 2, so no symbolic dim is 0

    def __index__(self):
        raise SymbolicValueError(f"the symbolic dim {self} has no value here: Python needs a "
                                 f"number (int(), range(), an index) where the shape is "
                                 f"symbolic")

    __int__ = __index__

    def __float__(self):
        self.__index__()

    def __repr__(self):
        out = ""
        for a, c in self.terms:
            term = a if c == 1 else f"-{a}" if c == -1 else f"{a}*{c}"
            if not out:
                out = term
            else:
                out += f" - {term[1:]}" if term.startswith("-") else f" + {term}"
        if self.const:
            out += f" + {self.const}" if self.const > 0 else f" - {-self.const}"
        return out

    __str__ = __repr__

    def __reduce__(self):
        raise TypeError("a symbolic dim cannot be pickled")


def _cmp(doc, fn):
    fn.__doc__ = doc
    return fn


_LT = _cmp("<", lambda lo, hi: True if hi < 0 else False if lo >= 0 else None)
_LE = _cmp("<=", lambda lo, hi: True if hi <= 0 else False if lo > 0 else None)
_GT = _cmp(">", lambda lo, hi: True if lo > 0 else False if hi <= 0 else None)
_GE = _cmp(">=", lambda lo, hi: True if lo >= 0 else False if hi < 0 else None)


def _ratio(a, b):
    """The integer k with a == k*b (both Dims), or None."""
    (atom, cb), = b.terms[:1]
    ta = dict(a.terms)
    if atom not in ta or ta[atom] % cb:
        return None
    k = ta[atom] // cb
    return k if (a - b * k) == 0 else None


def _is_int(x) -> bool:
    return isinstance(x, int) or (hasattr(x, "__index__") and not isinstance(x, Dim)
                                  and type(x).__module__ == "numpy")


def _opaque(atom: str) -> bool:
    return not atom.isidentifier()


def _paren(d) -> str:
    s = str(d)
    return s if isinstance(d, Dim) and d.is_symbol() else f"({s})"


def _names(d) -> str:
    return ", ".join(symbols(d)) or str(d)


def is_symbolic(d) -> bool:
    return isinstance(d, Dim)


def as_dim(d):
    """A dim as the rules take it: a Dim stays, anything else becomes an int."""
    return d if isinstance(d, Dim) else int(d)


def symbols(*dims) -> list[str]:
    """The symbol names that appear in `dims` (dims, shapes or None), in order."""
    out = []
    for d in dims:
        for x in (d if isinstance(d, (tuple, list)) else (d,)):
            if isinstance(x, Dim):
                for a, _ in x.terms:
                    names = [a] if not _opaque(a) else [w for w in _words(a)]
                    out += [n for n in names if n not in out]
    return out


def _words(atom):
    import re
    return re.findall(r"[A-Za-z_][A-Za-z0-9_]*", atom)


def solved(d, value) -> str | None:
    """What `d == value` says of its one symbol, as `N = 32` or `N is a multiple of 4`
    (None when d is not a symbolic dim of one symbol, or the equation has no solution)."""
    if not isinstance(d, Dim) or len(d.terms) != 1 or _opaque(d.terms[0][0]) \
            or not _is_int(value):
        return None
    (name, coeff), rest = d.terms[0], int(value) - d.const
    if rest % coeff:
        return None
    return f"{name} = {rest // coeff}"


def fixing(a, b) -> str:
    """`: they agree only when N = 32` when one of two dims that must be equal is symbolic
    and the other fixes its symbol (torch.export's constraint violation), else ""."""
    fix = solved(a, b) if isinstance(a, Dim) else solved(b, a)
    return f": they agree only when {fix}, but {fix.split(' =')[0]} is symbolic" if fix else ""

"""Products named by index letters: `einsum`, as a composition of transpose, expand_dims,
mul and sum (so its gradient comes from theirs, in every engine).

>>> import numpy as np
>>> from dualgrad import ops
>>> a, b = np.arange(6.0).reshape(2, 3), np.ones((3, 2))
>>> ops.einsum(a, b, equation="ij,jk->ik").tolist()
[[3.0, 3.0], [12.0, 12.0]]
"""
from __future__ import annotations

import string

from .composite import composite
from .core import Sample, ShapeError, fmt_shape, spec_of
from .elementwise import cast
from .reduce import sum as sum_
from .shape import expand_dims, transpose


def parse_einsum(equation, ndims, diagonals=False):
    """(operand letter strings, output letters), '...' replaced by letters of its own; a
    letter repeated within one operand (a diagonal) raises unless `diagonals` (eager's
    einsum takes them)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise ValueError(f"einsum: {len(terms)} operand specs in {equation!r} for "
                         f"{len(ndims)} operands")
    spare = [c for c in string.ascii_letters if c not in eq]
    n_ell = max((nd - len(t.replace("...", "")) for t, nd in zip(terms, ndims) if "..." in t),
                default=0)
    ell = "".join(spare[:n_ell])
    out = []
    for t, nd in zip(terms, ndims):
        k = nd - len(t.replace("...", ""))
        t = t.replace("...", ell[n_ell - k:] if k else "")
        if len(t) != nd or not t.isalpha():
            raise ValueError(f"einsum: operand spec {t!r} does not fit a {nd}-d operand "
                             f"in {equation!r}")
        if len(set(t)) != len(t) and not diagonals:
            raise NotImplementedError(f"einsum: a letter repeated within one operand ({t!r}, "
                                      f"a diagonal) is not supported")
        out.append(t)
    if arrow:
        rhs = rhs.replace("...", ell)
    else:   # NOTE: numpy's implicit output: the ellipsis, then letters seen once, sorted
        seen = "".join(out)
        rhs = ell + "".join(sorted(c for c in set(seen) if seen.count(c) == 1 and c not in ell))
    if any(c not in "".join(out) for c in rhs) or len(set(rhs)) != len(rhs):
        raise ValueError(f"einsum: output {rhs!r} of {equation!r} names a letter no operand "
                         f"has, or one twice")
    return out, rhs


def _einsum_ref(np, *xs, equation):
    return np.einsum(equation, *xs)


@composite(samples=(Sample(((2, 3), (3, 4)), {"equation": "ij,jk->ik"}),
                    Sample(((2, 3, 4), (2, 4, 5)), {"equation": "bij,bjk->bik"}),
                    Sample(((3, 4),), {"equation": "ij->ji"}),
                    Sample(((3,), (4,)), {"equation": "i,j->ij"}),
                    Sample(((2, 3, 4), (4, 5)), {"equation": "...j,jk->...k"}),
                    Sample(((2, 3), (3,)), {"equation": "ij,j"}),
                    Sample(((3, 4),), {"equation": "ij->"})),
           ref=_einsum_ref)
def einsum(*operands, equation):
    """np.einsum's `equation` over the operands (tf.einsum, torch.einsum): each operand is
    laid out over every letter (size 1 where it has none), the product is summed over the
    letters not in the output. Repeated letters within one operand are not supported."""
    specs = [spec_of(x) for x in operands]
    terms, rhs = parse_einsum(equation, [s.ndim for s in specs])
    letters = list(rhs) + sorted({c for t in terms for c in t} - set(rhs))
    sizes = {}
    for t, s in zip(terms, specs):
        for c, d in zip(t, s.shape):
            if d not in (None, 1) and sizes.setdefault(c, d) != d:
                raise ShapeError(f"einsum: letter {c!r} is {sizes[c]} in one operand and {d} "
                                 f"in {fmt_shape(s)} ({equation!r})")
    prod = None
    for t, x in zip(terms, operands):
        order = sorted(range(len(t)), key=lambda i: letters.index(t[i]))
        if order != list(range(len(t))):
            x = transpose(x, axes=tuple(order))
        for pos, c in enumerate(letters):
            if c not in t:
                x = expand_dims(x, axis=pos)
        prod = x if prod is None else prod * x
    summed = tuple(range(len(rhs), len(letters)))
    if not summed:
        return prod
    out = sum_(prod, axis=summed)   # NOTE: integers add in 64 bits; einsum keeps the dtype
    return out if out.dtype == spec_of(prod).dtype else cast(out, spec_of(prod).dtype)


"""Which index torch's CPU kernels report among equal values, where an algorithm of theirs
decides it, replayed with numba (imported on first use):

- `kth_index`: kthvalue's quickselect (Sedgewick's, with a median-of-three pivot);
- `topk_order`: topk's libstdc++ selection: std::partial_sort when k * 64 <= n, else
  std::nth_element then std::sort of the first k - 1 (when sorted), comparing values only;
- `sort_order`: sort(stable=False)'s std::sort, where torch does not sort stably;
- `mode_index`: mode's std::sort by C++'s `<`, then the last index of the first most
  frequent run.

NaN sorts as the largest value in both. Checked against torch on random rows full of ties
and NaN (tests/eager/test_tie_order.py); on rows without ties any correct selection agrees,
and topk takes NumPy's sort there. The loops compile on their first use with ties (about 6 s
per type, integer or floating, then cached on disk).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .rules import is_bfloat16


def _rows(x):
    """x's rows (last axis) as a contiguous 2-d array of float64 (floating x) or int64: the
    same order, in one of two types (numba compiles each loop once per type)."""
    flat = x.reshape(-1, x.shape[-1])
    floating = flat.dtype.kind == "f" or is_bfloat16(flat.dtype)
    return np.ascontiguousarray(flat, dtype=np.float64 if floating else np.int64)


# -- kthvalue ---------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _above(x, y):
    """x sorts after y: greater, or NaN against a number."""
    return (x != x and y == y) or x > y


@njit(cache=True, nogil=True)
def _swap(a, ix, p, q):
    a[p], a[q] = a[q], a[p]
    ix[p], ix[q] = ix[q], ix[p]


@njit(cache=True, nogil=True)
def _select_rows(rows, k, out):
    n = rows.shape[1]
    for r in range(rows.shape[0]):
        a = rows[r].copy()
        ix = np.arange(n)
        lo, hi = 0, n - 1
        while hi > lo:
            if hi == lo + 1:
                if _above(a[lo], a[hi]):
                    _swap(a, ix, lo, hi)
                break
            _swap(a, ix, (lo + hi) >> 1, lo + 1)    # median of three for the pivot
            if _above(a[lo + 1], a[hi]):
                _swap(a, ix, lo + 1, hi)
            if _above(a[lo], a[hi]):
                _swap(a, ix, lo, hi)
            if _above(a[lo + 1], a[lo]):
                _swap(a, ix, lo + 1, lo)
            i, j, piv = lo + 1, hi, a[lo]
            while True:
                i += 1
                while _above(piv, a[i]):
                    i += 1
                j -= 1
                while _above(a[j], piv):
                    j -= 1
                if j < i:
                    break
                _swap(a, ix, i, j)
            _swap(a, ix, lo, j)
            if j <= k:
                lo = i
            if j >= k:
                hi = j - 1
        out[r] = ix[k]


def kth_index(rows, k):
    """Each row's index (last axis) of its k-th smallest value (0-based), as torch's CPU
    kthvalue finds it."""
    flat = _rows(rows)
    out = np.empty(flat.shape[0], np.int64)
    _select_rows(flat, k, out)
    return out.reshape(rows.shape[:-1])


# -- topk: libstdc++'s algorithms on (value, index) pairs, comparing values --------------------
PLAIN_LESS = 2
@njit(cache=True, nogil=True)
def _before(x, y, largest):
    """The comparator: x goes first (larger, or smaller; NaN first when largest). largest
    PLAIN_LESS is C++'s x < y, mode's comparator, under which NaN ties with everything."""
    if largest == PLAIN_LESS:
        return x < y
    if largest:
        return (x != x and y == y) or x > y
    return (x == x and y != y) or x < y


@njit(cache=True, nogil=True)
def _insertion_sort(v, ix, f, last, largest):
    for i in range(f + 1, last):
        val, idx = v[i], ix[i]
        if _before(val, v[f], largest):
            for m in range(i, f, -1):
                v[m], ix[m] = v[m - 1], ix[m - 1]
            v[f], ix[f] = val, idx
        else:
            j = i
            while _before(val, v[j - 1], largest):
                v[j], ix[j] = v[j - 1], ix[j - 1]
                j -= 1
            v[j], ix[j] = val, idx


@njit(cache=True, nogil=True)
def _unguarded_insertion_sort(v, ix, f, last, largest):
    for i in range(f, last):
        val, idx = v[i], ix[i]
        j = i
        while _before(val, v[j - 1], largest):
            v[j], ix[j] = v[j - 1], ix[j - 1]
            j -= 1
        v[j], ix[j] = val, idx


@njit(cache=True, nogil=True)
def _median_to_first(v, ix, r, a, b, c, largest):
    if _before(v[a], v[b], largest):
        if _before(v[b], v[c], largest):
            _swap(v, ix, r, b)
        elif _before(v[a], v[c], largest):
            _swap(v, ix, r, c)
        else:
            _swap(v, ix, r, a)
    elif _before(v[a], v[c], largest):
        _swap(v, ix, r, a)
    elif _before(v[b], v[c], largest):
        _swap(v, ix, r, c)
    else:
        _swap(v, ix, r, b)


@njit(cache=True, nogil=True)
def _partition_pivot(v, ix, f, last, largest):
    _median_to_first(v, ix, f, f + 1, f + (last - f) // 2, last - 1, largest)
    lo, hi = f + 1, last
    while True:
        while _before(v[lo], v[f], largest):
            lo += 1
        hi -= 1
        while _before(v[f], v[hi], largest):
            hi -= 1
        if not lo < hi:
            return lo
        _swap(v, ix, lo, hi)
        lo += 1


@njit(cache=True, nogil=True)
def _adjust_heap(v, ix, f, hole, length, val, idx, largest):
    top, child = hole, hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if _before(v[f + child], v[f + child - 1], largest):
            child -= 1
        v[f + hole], ix[f + hole] = v[f + child], ix[f + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        v[f + hole], ix[f + hole] = v[f + child - 1], ix[f + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and _before(v[f + parent], val, largest):
        v[f + hole], ix[f + hole] = v[f + parent], ix[f + parent]
        hole = parent
        parent = (hole - 1) // 2
    v[f + hole], ix[f + hole] = val, idx


@njit(cache=True, nogil=True)
def _pop_heap(v, ix, f, last, res, largest):
    val, idx = v[res], ix[res]
    v[res], ix[res] = v[f], ix[f]
    _adjust_heap(v, ix, f, 0, last - f, val, idx, largest)


@njit(cache=True, nogil=True)
def _heap_select(v, ix, f, mid, last, largest):
    n = mid - f
    if n >= 2:
        parent = (n - 2) // 2
        while True:
            _adjust_heap(v, ix, f, parent, n, v[f + parent], ix[f + parent], largest)
            if parent == 0:
                break
            parent -= 1
    for i in range(mid, last):
        if _before(v[i], v[f], largest):
            _pop_heap(v, ix, f, mid, i, largest)


@njit(cache=True, nogil=True)
def _partial_sort(v, ix, f, mid, last, largest):
    _heap_select(v, ix, f, mid, last, largest)
    while mid - f > 1:
        mid -= 1
        _pop_heap(v, ix, f, mid, mid, largest)


@njit(cache=True, nogil=True)
def _log2(n):
    k = 0
    while n > 1:
        n >>= 1
        k += 1
    return k


@njit(cache=True, nogil=True)
def _nth_element(v, ix, nth, last, largest):
    f = 0
    depth = 2 * _log2(last)
    while last - f > 3:
        if depth == 0:
            _heap_select(v, ix, f, nth + 1, last, largest)
            _swap(v, ix, f, nth)
            return
        depth -= 1
        cut = _partition_pivot(v, ix, f, last, largest)
        if cut <= nth:
            f = cut
        else:
            last = cut
    _insertion_sort(v, ix, f, last, largest)


@njit(cache=True, nogil=True)
def _introsort_loop(v, ix, f, last, depth, largest):
    # NOTE: libstdc++ recurses on [cut, last) and loops on [f, cut); the ranges are disjoint,
    # so a stack of pending ranges (no recursion, which numba's cache mishandles) is the same
    todo = [(f, last, depth)]
    while len(todo):
        f, last, depth = todo.pop()
        while last - f > 16:
            if depth == 0:
                _partial_sort(v, ix, f, last, last, largest)
                break
            depth -= 1
            cut = _partition_pivot(v, ix, f, last, largest)
            todo.append((cut, last, depth))
            last = cut


@njit(cache=True, nogil=True)
def _std_sort(v, ix, last, largest):
    if last > 0:
        _introsort_loop(v, ix, 0, last, 2 * _log2(last), largest)
        if last > 16:
            _insertion_sort(v, ix, 0, 16, largest)
            _unguarded_insertion_sort(v, ix, 16, last, largest)
        else:
            _insertion_sort(v, ix, 0, last, largest)


@njit(cache=True, nogil=True)
def _topk_rows(rows, k, largest, sort, out):
    n = rows.shape[1]
    for r in range(rows.shape[0]):
        v = rows[r].copy()
        ix = np.arange(n)
        if k * 64 <= n:
            _partial_sort(v, ix, 0, k, n, largest)
        else:
            _nth_element(v, ix, k - 1, n, largest)
            if sort:
                _std_sort(v, ix, k - 1, largest)
        out[r] = ix


def has_ties(x):
    """Some row (last axis) holds a value twice (two NaN count as equal)."""
    s = np.sort(x, axis=-1)
    same = s[..., 1:] == s[..., :-1]
    if s.dtype.kind == "f" or is_bfloat16(s.dtype):
        same |= np.isnan(s[..., 1:]) & np.isnan(s[..., :-1])
    return bool(same.any())


def topk_order(x, k, largest, sort):
    """A permutation of each row (last axis) whose first k entries are the indices torch's
    CPU topk reports, in its order (the rest in the order the selection left them). Rows
    without ties have one answer: NumPy's sort gives it without compiling the loops."""
    if k == 0 or x.shape[-1] == 0 or not has_ties(x):
        order = np.argsort(x, axis=-1)      # NOTE: a NaN sorts last, as torch's largest value
        return order[..., ::-1] if largest else order
    flat = _rows(x)
    out = np.empty(flat.shape, np.int64)
    _topk_rows(flat, k, largest, sort, out)
    return out.reshape(x.shape)


# -- sort(stable=False) -------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _sort_rows(rows, largest, out):
    n = rows.shape[1]
    for r in range(rows.shape[0]):
        v = rows[r].copy()
        ix = np.arange(n)
        _std_sort(v, ix, n, largest)
        out[r] = ix


def sorts_stably(x, descending):
    """torch's CPU sort(stable=False) orders x's rows (last axis) as a stable sort does: when
    no row has ties, or when it takes its radix sort (a 1-d integer tensor of at least 32768
    elements, ascending)."""
    radix = x.ndim == 1 and x.dtype.kind in "iu" and x.size >= 32768 and not descending
    return radix or not has_ties(x)


def sort_order(x, descending):
    """Each row's (last axis) order as torch's CPU sort(stable=False) leaves it where it is not
    stable: std::sort (introsort, then insertion sort) of (value, index) pairs by value."""
    flat = _rows(x)
    out = np.empty(flat.shape, np.int64)
    _sort_rows(flat, descending, out)
    return out.reshape(x.shape)


# -- mode ---------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _mode_rows(rows, out):
    n = rows.shape[1]
    for r in range(rows.shape[0]):
        v = rows[r].copy()
        ix = np.arange(n)
        _std_sort(v, ix, n, PLAIN_LESS)
        run, best = 0, 0
        for i in range(n):
            run += 1
            if i == n - 1 or v[i] != v[i + 1]:      # NOTE: each NaN is a run of its own
                if run > best:
                    best, out[r] = run, ix[i]
                run = 0


def mode_index(rows):
    """Each row's index (last axis) of its mode as torch's CPU kernel reports it: std::sort of
    (value, index) pairs by `value <`, then the last pair of the first longest run of equal
    values (the smallest mode)."""
    flat = _rows(rows)
    out = np.zeros(flat.shape[0], np.int64)
    _mode_rows(flat, out)
    return out.reshape(rows.shape[:-1])

"""A parameter group's optimizer state kept as flat arrays across steps (multi-tensor apply).

An optimizer whose rule treats every element alike (`Optimizer._elementwise`) updates a
group's parameters laid end to end in one go. Its state lives in one flat array per key
(`exp_avg`, `momentum_buffer`, ...), and each parameter's state tensor is a view of its
stretch, as torch's per-parameter state reads; a scalar key (the step count) is one array
with an element per parameter, each parameter's 0-d tensor a view of its element. A step
writes the rule's results back into these arrays, so the views stay valid and nothing is
gathered or scattered again. If anything replaced a state tensor or its array (a user,
`load_state_dict`), the flat arrays are gathered afresh from the per-parameter state.
"""
from __future__ import annotations

import numpy as np

from ..core import Tensor


def gather(owner, params):
    """The parameters' state laid end to end, {key: flat tensor} (scalars 0-d), or None when
    it cannot be: keys that differ, a value that is not an array, scalars that differ (a
    parameter that skipped a step has another step count)."""
    states = [owner[p] for p in params]
    keys = states[0].keys()
    if any(st.keys() != keys for st in states):
        return None
    flat = {}
    for k in keys:
        arrs = [getattr(st[k], "_array", st[k]) for st in states]
        if not all(isinstance(a, np.ndarray) for a in arrs):
            return None
        if arrs[0].ndim == 0:
            if any(a.ndim or a != arrs[0] for a in arrs):
                return None
            flat[k] = Tensor(arrs[0].copy())
        else:
            flat[k] = Tensor(np.concatenate([a.reshape(-1) for a in arrs]))
    return flat


class FlatState:
    """The flat state of one list of parameters, made from the rule's output `flat`
    ({key: flat tensor, 0-d for a scalar}); see the module docstring. It also keeps the
    buffers the parameters and gradients are laid end to end in, with a view per parameter."""

    def __init__(self, owner, params, flat, taken):
        self.owner, self.params = owner, params
        self.vectors, self.scalars = {}, {}
        for k, t in flat.items():
            a = t._array
            if a.ndim == 0:
                self.scalars[k] = np.full(len(params), a, a.dtype)
            else:   # NOTE: never keep the parameters' or gradients' flat buffer as state
                self.vectors[k] = a.copy() if id(a) in taken or not a.flags.owndata else a
        sizes = [p._array.size for p in params]
        offsets = np.cumsum([0] + sizes).tolist()
        dtype = params[0]._array.dtype
        self.p, self.g = np.empty(offsets[-1], dtype), np.empty(offsets[-1], dtype)
        self.p_views = [self.p[o:o + p._array.size].reshape(p._array.shape)
                        for p, o in zip(params, offsets)]
        self.per_param = [(p, p._array.shape, owner[p]) for p in params]
        self.checks = [c for i, (p, off) in enumerate(zip(params, offsets))
                       for c in self._scatter(i, p, off)]
        self.offsets, self.in_place, self._chunked = offsets[:-1], FlatParams(params), None

    def offset_chunks(self, native):
        """The parameters' offsets in the flat state, int64 arrays cut as ops/native's `chunks`
        (made on first use)."""
        if self._chunked is None:
            self._chunked = [np.array(c, np.int64) for c in native.chunks(self.offsets)]
        return self._chunked

    def _scatter(self, i, p, off):
        """Parameter i's state tensors made views of the flat arrays: [(dict, key, tensor,
        view)]."""
        st, mine, n = self.owner[p], [], p._array.size
        views = [(k, a[off:off + n].reshape(p._array.shape)) for k, a in self.vectors.items()]
        views += [(k, a[i:i + 1].reshape(())) for k, a in self.scalars.items()]
        for k, view in views:
            t = st.get(k)
            if isinstance(t, Tensor):
                t._array = view
            else:
                t = st[k] = Tensor(view)
            mine.append((st, k, t, view))
        return mine

    def valid(self, owner):
        """Every parameter's state still is these views, the step counts agree, and the
        parameters have the shapes they had."""
        n = len(self.vectors) + len(self.scalars)
        return owner is self.owner and all([
            owner.get(p) is st and len(st) == n and p._array.shape == shape
            for p, shape, st in self.per_param]) and all([
                st.get(k) is t and t._array is v for st, k, t, v in self.checks]) and not any(
                [(a != a[0]).any() for a in self.scalars.values()])

    def gather(self, maximize):
        """(parameters, gradients) laid end to end in the kept buffers."""
        np.concatenate([p._array.reshape(-1) for p in self.params], out=self.p)
        np.concatenate([p.grad._array.reshape(-1) for p in self.params], out=self.g)
        if maximize:
            np.negative(self.g, out=self.g)
        return self.p, self.g

    def scatter(self):
        """Each parameter's new values, from the kept buffer the rule wrote."""
        for p, v in zip(self.params, self.p_views):
            np.copyto(p._array, v, casting="same_kind")

    def for_rule(self):
        """{key: flat tensor}: what the rule reads (and replaces with its results)."""
        out = {k: Tensor(a) for k, a in self.vectors.items()}
        out.update({k: Tensor(a[0].copy()) for k, a in self.scalars.items()})
        return out

    def store(self, flat):
        """Write the rule's results into the flat arrays; False if its keys are new."""
        if flat.keys() != self.vectors.keys() | self.scalars.keys():
            return False
        for k, a in self.vectors.items():
            new = flat[k]._array
            if new is not a:
                np.copyto(a, new, casting="same_kind")
        for k, a in self.scalars.items():
            a[...] = flat[k]._array
        return True


# -- in place, many parameters per call (ops/native's `_many` loops) ----------------------------
class FlatParams:
    """A list of parameters as 1-d views, for a rule that updates them in place (Adam's loop
    in ops/native.py), cut in `native.chunks`: the views are made once and
    checked by identity each step. `views` gives None whenever the loop cannot take them,
    and the caller runs the NumPy rule."""

    def __init__(self, params):
        self.params = params
        self.arrays = [None] * len(params)
        self.chunks = None

    def views(self, native):
        """(chunks of flat parameters, chunks of flat gradients), or None: a parameter that
        is not a writable C-contiguous float32/float64 array of the first one's dtype, a
        gradient of another dtype or shape than its parameter's."""
        arrays = self.arrays
        dt = self.params[0]._array.dtype
        if dt.char not in "fd":   # NOTE: numba has no float16 arithmetic: the NumPy rule
            return None
        gs = []
        for i, p in enumerate(self.params):
            a = p._array
            if a is not arrays[i]:   # NOTE: first step, or the user replaced p.data
                f = a.flags
                if a.dtype != dt or not (f.c_contiguous and f.writeable):
                    return None
                arrays[i], self.chunks = a, None
            g = p.grad._array
            if g.dtype != dt or g.shape != a.shape:
                return None
            if not g.flags.c_contiguous:   # NOTE: a summed transposed product (LSTM weights)
                g = np.ascontiguousarray(g)
            gs.append(g.reshape(-1))
        if self.chunks is None:
            self.chunks = native.chunks([a.reshape(-1) for a in arrays])
        return self.chunks, native.chunks(gs)

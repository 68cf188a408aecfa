"""Turn the op registry's samples into arrays, graph placeholders and reference values."""
from __future__ import annotations

import numpy as np

from dualgrad import graph
from dualgrad import ops
from tests.opinfo import numeric_grad as _numeric_grad, sample_arrays


arrays_for = sample_arrays


def graph_args(arrays, unknown_dims=False):
    """Placeholders for the array args (feeds in a dict), Python scalars kept as they are."""
    args, feeds = [], {}
    for a in arrays:
        if isinstance(a, np.ndarray):
            shape = (None,) * a.ndim if unknown_dims else a.shape
            p = graph.placeholder(a.dtype, shape)
            feeds[p] = a
            args.append(p)
        else:
            args.append(a)
    return args, feeds


def float_inputs(sample, arrays):
    """Indices of the args that are random floats (the ones gradients are checked for)."""
    return [i for i, (s, a) in enumerate(zip(sample.args, arrays))
            if isinstance(s, tuple) and isinstance(a, np.ndarray)]


def numeric_grad(f, arrays, i, eps=1e-6):
    """Central finite difference of scalar f(arrays) with respect to arrays[i] (float64)."""
    return _numeric_grad(lambda *a: f(list(a)), arrays, i, eps)


def op_cases():
    for name, op in sorted(ops.REGISTRY.items()):
        for i, s in enumerate(op.samples):
            yield name, op, i, s


def composite_cases():
    for name, c in sorted(ops.COMPOSITES.items()):
        for i, s in enumerate(c.samples):
            yield name, c, i, s

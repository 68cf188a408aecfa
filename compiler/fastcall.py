"""A fused loop on small arrays, called through a Python function generated for its shapes.

`FusedKernel.__call__` is general: it checks and coerces every argument (dtype, shape,
contiguity), allocates outputs in the loop's R x C layout and times large calls to pick the
serial or the parallel variant. For a loop of a few thousand elements that costs 4-25 µs
per call against 0.5-5 µs for the loop itself (the LSTM's gate loops: 17 inputs and 7
outputs). A fused step in a plan sees the same shapes and dtypes on every call, so
`small_caller` writes, once per fused step, a function that only guards them and calls the
serial loop directly::

    def fused_call(bufs, a0, a1):
        if (a0.shape, a0.dtype, a1.shape, a1.dtype) != GUARD or not a0.flags.c_contiguous:
            return MISS                      # the caller falls back to the general path
        o0 = empty(S0, D0) if bufs is None or bufs[0] is None else bufs[0]
        serial(R, C, a0, a1.reshape(V1), o0.reshape(W0))
        return o0

Only loops below PARALLEL_MIN_ELEMENTS get one (the general path always runs those
serially, so results are the same kernel's).
"""
from __future__ import annotations

import numpy as np

MISS = object()   # the guard failed: use the general path


def small_caller(kernel, R, C, in_shapes, out_shapes, out_views, out_dtypes, first):
    """The generated function for one fused step, or None when the loop is not small.

    first: the arrays of a first call. An input that came non-contiguous (a column slice of
    a larger matrix: the LSTM's gates) comes so every time, from the same producer: the
    function copies it instead of guarding it.
    """
    from .fused_kernel import PARALLEL_MIN_ELEMENTS
    layout = getattr(kernel, "call_layout", None)
    if (layout is None or R * C >= PARALLEL_MIN_ELEMENTS
            or any(type(a) is not np.ndarray for a in first)):
        return None
    serial, in_roles, in_dtypes = layout()
    views = ((R, C), (R,), (C,), ())
    names = [f"a{i}" for i in range(len(in_shapes))]
    guard, contiguous, args = [], [], []
    for a, shape, kc, dt, arr in zip(names, in_shapes, in_roles, in_dtypes, first):
        guard += [shape, np.dtype(dt)]
        want = views[kc]
        if not arr.flags.c_contiguous:
            # NOTE: reshaping a strided view may give another strided view (a transposed
            # gradient merges two dims without a copy): the loop needs C order
            args.append(f"{a}.copy()" if tuple(shape) == want else
                        f"ascontiguousarray({a}.reshape({want!r}))")
        elif tuple(shape) == want:
            contiguous.append(f"{a}.flags.c_contiguous")
            args.append(a)
        else:
            contiguous.append(f"{a}.flags.c_contiguous")
            args.append(f"{a}.reshape({want!r})")
    env = {"GUARD": tuple(guard), "MISS": MISS, "serial": serial, "empty": np.empty,
           "ascontiguousarray": np.ascontiguousarray}
    lines = [f"def fused_call(bufs, {', '.join(names)}):" if names else
             "def fused_call(bufs):"]
    checks = []
    if names:
        checks.append(f"({', '.join(f'{a}.shape, {a}.dtype' for a in names)},) != GUARD")
    if contiguous:
        checks.append(f"not ({' and '.join(contiguous)})")
    if checks:
        lines += [f"    if {' or '.join(checks)}:", "        return MISS"]
    outs = []
    for k, (shape, view, dt) in enumerate(zip(out_shapes, out_views, out_dtypes)):
        env[f"D{k}"] = np.dtype(dt)
        lines.append(f"    o{k} = empty({tuple(shape)!r}, D{k}) if bufs is None or "
                     f"bufs[{k}] is None else bufs[{k}]")
        outs.append(f"o{k}" if tuple(shape) == tuple(view) else f"o{k}.reshape({view!r})")
    lines.append(f"    serial({R}, {C}, {', '.join(args + outs)})")
    ret = ", ".join(f"o{k}" for k in range(len(out_shapes)))
    lines.append(f"    return {ret}" if len(out_shapes) == 1 else f"    return ({ret},)")
    source = "\n".join(lines) + "\n"
    exec(compile(source, "<dualgrad fused_call>", "exec"), env)  # noqa: S102 - our own text
    fn = env["fused_call"]
    fn.source = source
    return fn

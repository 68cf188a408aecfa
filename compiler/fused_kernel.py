"""Runtime loading of fused kernels: a `FusedSpec` in, a callable numba loop out.

`compile_fused` generates the kernel module's source (`codegen.py`), places it in the
checked disk cache (`kernel_cache.py`), imports it and compiles (or loads from numba's cache)
its serial loop; `FusedKernel` calls it on arrays.

    >>> import numpy as np
    >>> from dualgrad.compiler.fused_spec import FusedSpec
    >>> spec = FusedSpec(
    ...     inputs=(("float32", "full"),),
    ...     nodes=(("in", 0), ("const", 2.0, "float32"),
    ...            ("ew", "({0} * {1})", (0, 1), "float32"),
    ...            ("reduce", "sum", 2, "float32")),
    ...     outputs=(2, 3))
    >>> fn = compile_fused(spec)
    >>> y, s = fn(2, 3, np.arange(6, dtype=np.float32).reshape(2, 3))
    >>> y.tolist(), s.tolist()
    ([[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]], [6.0, 24.0])

A large call (at least PARALLEL_MIN_ELEMENTS elements) may instead run the same serial loop
on slices of rows from dualgrad's own worker threads (compiler/workers.py), which sleep
between calls: numba's `prange` would leave its threading layer's workers spinning in the
user's process after the call returns. Both ways are timed and the faster runs (see
FusedKernel._choose).
"""
from __future__ import annotations

import math
import os
import re
import threading
import time

import numpy as np

from . import kernel_cache, workers
from .codegen import generate_source, module_name
from .fused_spec import ROLES, CodegenError, FusedSpec, SpecInfo

# Below this many elements splitting a loop over threads costs more than it saves (handing a
# slice to a worker costs ~10-20 us; 2**16 float32 elements stream in ~10 us on one core).
PARALLEL_MIN_ELEMENTS = int(os.environ.get("DUALGRAD_PARALLEL_MIN_ELEMENTS", 1 << 16))
CHUNKS = 4   # slices per thread of a split loop (FusedKernel._pieces)
PROBE_EVERY = 64


# -- the callable ------------------------------------------------------------------------------
def _numba_signature(spec: FusedSpec):
    from numba import from_dtype, types
    ndim = {"full": 2, "row": 1, "col": 1, "scalar": 0}
    prog = SpecInfo(spec)
    ins = [types.Array(from_dtype(np.dtype(d)), ndim[k], "C") for d, k in spec.inputs]
    outs = [types.Array(from_dtype(np.dtype(prog.dtype[o])), ndim[prog.role[o]], "C")
            for o in spec.outputs]
    return (types.intp, types.intp, *ins, *outs)


def _compile(dispatcher, sig):
    """Compile (or load from numba's cache) one signature: (seconds, cache hit?)."""
    import warnings
    from numba.core.errors import NumbaPerformanceWarning
    hits = sum(dispatcher.stats.cache_hits.values())
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        kernel_cache.compile_cached(dispatcher, sig)
    return time.perf_counter() - t0, sum(dispatcher.stats.cache_hits.values()) > hits


class FusedKernel:
    """The callable `compile_fused` returns: fn(R, C, *arrays, out=None) -> tuple of arrays.

    Inputs are full (R, C), row (R,), col (C,) or scalar () arrays of the spec's dtypes; an
    array of another shape with the right size (e.g. (B, T, D) for R = B*T, C = D, or a
    keepdims (R, 1) row) is reshaped, a non-contiguous one copied, a Python scalar converted.
    Outputs are freshly allocated, or written into `out=` buffers (exact shape and dtype,
    C-contiguous, sharing no memory with an input or another output), which are returned.

    Attributes for reports: spec, source, module_name, module_path, layout ("flat"|"rows"),
    cache_hit (serial kernel loaded from disk), compile_seconds (serial compile or load),
    parallel_compiled (the threaded variant was tried: set on the first call of at least
    PARALLEL_MIN_ELEMENTS elements whose outputs can be split by rows), parallel_error (always
    None: nothing is compiled for it), timing (ns per element of the serial and the threaded
    way on large calls, which decides between them).
    """

    def __init__(self, spec, source, flat, module, path, seconds, hit):
        self.spec, self.source, self.layout = spec, source, "flat" if flat else "rows"
        self.module_name, self.module_path = module.__name__, str(path)
        self.compile_seconds, self.cache_hit = seconds, hit
        self.parallel_compiled = False
        self.parallel_cache_hit = None
        self.parallel_compile_seconds = None
        self.parallel_error = None
        self._serial = module.kernel_serial
        self._sig = _numba_signature(spec)
        prog = SpecInfo(spec)
        code = {k: i for i, k in enumerate(ROLES)}
        self._ins = tuple((np.dtype(d), code[k]) for d, k in spec.inputs)
        self._outs = tuple((np.dtype(prog.dtype[o]), code[prog.role[o]]) for o in spec.outputs)
        # NOTE: a slice of rows computes its own full and row outputs; column and whole-array
        # reductions need every row, so those loops stay on one thread
        self._can_split = all(kc in (0, 1) for _, kc in self._outs) and \
            any(kc == 0 for _, kc in self._outs)
        self._rows_only = not flat   # the rows layout splits rows only: R > 1 to go parallel
        self._lock = threading.Lock()
        self._per_element = [None, None]   # seconds per element: serial, parallel
        self._samples = [0, 0]
        self._big_calls = 0

    def __repr__(self):
        return (f"<FusedKernel {self.module_name} {self.layout} inputs={len(self._ins)} "
                f"outputs={len(self._outs)} cache_hit={self.cache_hit}>")

    def __call__(self, R, C, *arrays, out=None):
        if type(R) is not int or type(C) is not int:
            R, C = int(R), int(C)
        shapes = ((R, C), (R,), (C,), ())
        if len(arrays) != len(self._ins):
            raise TypeError(f"fused kernel {self.module_name} takes {len(self._ins)} arrays, "
                            f"got {len(arrays)}")
        args = list(arrays)
        for i, (dt, kc) in enumerate(self._ins):
            a = args[i]
            if (type(a) is not np.ndarray or a.dtype is not dt or a.shape != shapes[kc]
                    or not a.flags.c_contiguous):
                args[i] = self._coerce(i, a, shapes[kc])
        if out is None:
            bufs = tuple(np.empty(shapes[kc], dt) for dt, kc in self._outs)
        else:
            bufs = self._check_out(out, shapes, args)
        n = R * C
        if n < PARALLEL_MIN_ELEMENTS or not self._can_split or (R == 1 and self._rows_only):
            self._serial(R, C, *args, *bufs)
            return bufs
        kernel = self._choose()
        t0 = time.perf_counter()
        kernel(R, C, *args, *bufs)
        self._timed(kernel, (time.perf_counter() - t0) / n)
        return bufs

    def call_layout(self):
        """(serial loop, input role codes, input dtypes): what compiler/fastcall.py needs to
        call the serial loop directly on arrays already in the loop's layout."""
        return self._serial, [kc for _, kc in self._ins], [dt for dt, _ in self._ins]

    # NOTE: on a loaded 2-core machine a split loop can run slower than the serial one (the
    # other share waits for a core), so above the threshold both ways are timed per element
    # and the faster one is used, the other re-timed every PROBE_EVERY calls. Each row is
    # computed by the same loop either way, so the choice does not change results.
    def _choose(self):
        self.parallel_compiled = True
        if workers.size() < 2:
            return self._serial
        t_ser, t_par = self._per_element
        if t_par is None:
            return self._threaded
        if t_ser is None:
            return self._serial
        self._big_calls += 1
        par = self._threaded
        faster, slower = (par, self._serial) if t_par <= t_ser else (self._serial, par)
        return slower if self._big_calls % PROBE_EVERY == 0 else faster

    def _threaded(self, R, C, *arrays):
        """The serial loop on slices of rows (flat layout: of the flattened arrays), which the
        worker threads and this one share (`_pieces`)."""
        codes = [kc for _, kc in self._ins] + [kc for _, kc in self._outs]
        n = self._pieces(R * C if self.layout == "flat" else R, C if self.layout != "flat" else 1)
        if self.layout == "flat":
            total = R * C
            arrays = [a.reshape(1, total) if kc == 0 else a for a, kc in zip(arrays, codes)]
            cut = [total * i // n for i in range(n + 1)]
            part = lambda a, kc, lo, hi: a[:, lo:hi] if kc == 0 else a   # noqa: E731
            shape = lambda lo, hi: (1, hi - lo)                             # noqa: E731
        else:
            cut = [R * i // n for i in range(n + 1)]
            part = lambda a, kc, lo, hi: a[lo:hi] if kc in (0, 1) else a   # noqa: E731
            shape = lambda lo, hi: (hi - lo, C)                             # noqa: E731
        serial = self._serial

        def task(lo, hi):
            return lambda: serial(*shape(lo, hi), *[part(a, kc, lo, hi)
                                                     for a, kc in zip(arrays, codes)])
        workers.run([task(lo, hi) for lo, hi in zip(cut, cut[1:]) if hi > lo])

    @staticmethod
    def _pieces(units, per_unit):
        """How many slices to cut `units` rows (of `per_unit` elements) into: CHUNKS per
        thread, each of at least half PARALLEL_MIN_ELEMENTS elements, at least one per
        thread. The threads take them as they come free (workers.run), so a thread whose
        core is busy with another process takes fewer."""
        threads = workers.size()
        least = max(1, (PARALLEL_MIN_ELEMENTS // 2) // max(1, per_unit))
        return max(threads, min(threads * CHUNKS, units // least, units))

    def _timed(self, kernel, seconds_per_element):
        i = 0 if kernel is self._serial else 1
        self._samples[i] += 1
        if self._samples[i] == 1:
            return  # NOTE: the first large call of a variant pays page faults / thread start-up
        old = self._per_element[i]
        self._per_element[i] = seconds_per_element if old is None else \
            0.7 * old + 0.3 * seconds_per_element

    @property
    def timing(self):
        """Smoothed ns per element of the serial and the parallel kernel on large calls."""
        return {k: None if t is None else t * 1e9
                for k, t in zip(("serial_ns_per_element", "parallel_ns_per_element"),
                                self._per_element)}

    def _coerce(self, i, a, shape):
        dt, kc = self._ins[i]
        if type(a) is not np.ndarray:
            a = np.asarray(a, dtype=dt)
        elif a.dtype != dt:
            raise TypeError(f"fused kernel {self.module_name}: input {i} has dtype {a.dtype.name}, "
                            f"expected {dt}")
        if a.shape != shape:
            if a.size != math.prod(shape):
                raise ValueError(f"fused kernel {self.module_name}: input {i} ({ROLES[kc]}) "
                                 f"has shape {a.shape}, expected {shape}")
            a = a.reshape(shape)
        # NOTE: not np.ascontiguousarray, which turns a 0-d array into a 1-d one
        return a if a.flags.c_contiguous else a.copy(order="C")

    def _check_out(self, out, shapes, args):
        if len(out) != len(self._outs):
            raise TypeError(f"fused kernel {self.module_name}: out= needs {len(self._outs)} "
                            f"buffers, got {len(out)}")
        for o, (buf, (dt, kc)) in enumerate(zip(out, self._outs)):
            if (type(buf) is not np.ndarray or buf.dtype != dt or buf.shape != shapes[kc]
                    or not buf.flags.c_contiguous or not buf.flags.writeable):
                got = (getattr(buf, "dtype", type(buf).__name__), getattr(buf, "shape", None))
                raise ValueError(f"fused kernel {self.module_name}: out[{o}] must be a "
                                 f"writeable C-contiguous {dt} array of shape {shapes[kc]}, "
                                 f"got {got}")
        # NOTE: the loops are compiled with noalias arguments (prelude.NoAliasPipeline)
        for o, buf in enumerate(out):
            for name, i, a in [("input", i, a) for i, a in enumerate(args)] + \
                    [("out", i, b) for i, b in enumerate(out[:o])]:
                if np.may_share_memory(buf, a):
                    raise ValueError(f"fused kernel {self.module_name}: out[{o}] overlaps "
                                     f"{name} {i}; outputs must not share memory with the "
                                     f"inputs or with each other")
        return tuple(out)


def _one_line(exc) -> str:
    """The informative line of a numba error (they open with 'Failed in ... pipeline')."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(("Failed in", "During:", "File ", "^"))]
    return f"{type(exc).__name__}: {(useful or lines or [''])[0]}"[:300]


# -- entry point -------------------------------------------------------------------------------
_KERNELS: dict[str, FusedKernel] = {}
_COMPILE_LOCK = threading.Lock()


def compile_fused(spec: FusedSpec) -> FusedKernel:
    """Compile `spec` (or load it from the disk cache) once per process; see FusedKernel.

    Raises CodegenError with a one-line reason if the spec uses something the generator does
    not support or numba cannot compile it.
    """
    key = spec.canonical()
    fn = _KERNELS.get(key)
    if fn is not None:
        return fn
    with _COMPILE_LOCK:
        fn = _KERNELS.get(key)
        if fn is None:
            fn = _KERNELS[key] = _build(spec)
    return fn


def _build(spec: FusedSpec) -> FusedKernel:
    source, flat = generate_source(spec)
    name = module_name(spec, source)
    try:
        path = kernel_cache.place(name, source)
    except OSError as e:
        raise CodegenError(f"cannot write kernel {name}: {e.strerror or e}") from e
    sig = _numba_signature(spec)
    try:
        module = kernel_cache.load(name, source, path)
        whys = [kernel_cache.attach_cache(d) for d in (module.kernel_serial,
                                                        module.kernel_parallel)]
        if any(whys):
            kernel_cache.warn_uncached(path, next(w for w in whys if w))
        seconds, hit = _compile(module.kernel_serial, sig)
    except Exception as e:
        raise CodegenError(f"numba cannot compile {name}: {_one_line(e)}") from e
    return FusedKernel(spec, source, flat, module, path, seconds, hit)

"""Matrix products that keep BLAS's thread pool asleep where its threads do not pay.

OpenBLAS multiplies on several threads once m*k*n passes 262,144, and its threads then spin,
waiting for the next product. On a machine whose other core is busy (another process, a user's
data loader) a product that waits for a thread the scheduler has not run yet takes 4-24 ms
instead of 20-70 µs: the transformer's eager step, in a process with OpenBLAS's default
threads (2 here) and a busy process on the other core, went from 2.6 to 8.8 ms median, 14.7 ms
mean, and the spinning threads slowed the step's other ops even on an idle machine (2.55 ->
3.6 ms). Below SERIAL_MAX a 2-D product is therefore cut into row blocks of at most
SERIAL_MIN multiply-adds, which OpenBLAS runs on the calling thread. OpenBLAS picks its kernel
by shape, so a block's sums may round differently: the values equal the whole product's up to
the last bits (2e-6 relative in float32, tests/ops/test_gemm.py). Nothing global is changed:
the user's thread settings stay as they are, and above SERIAL_MAX (a product of ~0.35 ms on
one core here) BLAS threads as it likes.

The blocks are used only where the BLAS is known to have more than one thread: NumPy's own
OpenBLAS among the libraries this process has already loaded (its `get_num_threads`, asked at
each large enough product, so `threadpoolctl` limits and `dualgrad bench`'s one BLAS thread are
seen). A process may hold several OpenBLAS copies (SciPy's wheel brings another, with its own
thread setting): the one asked is the one NumPy's wheel ships (in NumPy's install, with the
64-bit-index symbols NumPy builds against), never whichever the loader mapped first. Asking
SciPy's copy (2 threads) while NumPy's had 1 cut the LSTM's (64, 256) @ (256, 1024) products into
64 one-row products: the compiled training step took 174 ms instead of 90. With another BLAS,
or none found, products are NumPy's own.

A block has at least MIN_ROWS rows: where k * n is so large that fewer rows would fit under
SERIAL_MIN, the product is left whole (one-row blocks are matrix-vector products, 2.5x slower
than the whole product on one thread, 1.5x on two: (64, 256) @ (256, 1024) here).
"""
from __future__ import annotations

import ctypes
import os
import threading

import numpy as np

SERIAL_MIN = 65536 * 4   # m*k*n up to which OpenBLAS stays on the calling thread by itself
SERIAL_MAX = 1 << 24     # m*k*n above which the product is left to BLAS's threads
# A strided b (eager's `x @ W.T`) is copied to C order first when k is at most this: blocks of
# (128, 64) @ (64, 128) took 44 µs on W.T and 28 with the copy (2-3x on 10 shapes with
# k <= 128); with k = 256 the copy lost (102 -> 160 µs at (64, 256) @ (256, 256)).
COPY_MAX_K = 128
MIN_ROWS = 8             # fewer rows per block lose more than BLAS's threads cost (docstring)
SMALL_PRODUCT = 131072   # m*k*n per image up to which sum_nt stacks its products (sum_nt)
_NAMES = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
          "openblas_get_num_threads64_", "openblas_get_num_threads")
_LOCK = threading.Lock()
_UNSET = object()
_get_threads = _UNSET


def _loaded_openblas():
    """OpenBLAS's get_num_threads from a library this process has already loaded, or None.
    RTLD_NOLOAD: a handle to a library already in memory, never a new one loaded."""
    if not hasattr(os, "RTLD_NOLOAD"):
        return None
    paths = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and "openblas" in os.path.basename(fields[5]).lower():
                    paths.append(fields[5].strip())
    except OSError:
        return None
    found = []   # (rank, fn): NumPy's own copy first, then by symbol (64-bit indices first)
    for path in dict.fromkeys(p for p in paths if os.path.isabs(p)):
        try:
            lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        except OSError:
            continue
        for rank, name in enumerate(_NAMES):
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype, fn.argtypes = ctypes.c_int, []
                found.append((0 if _numpys(path) else 1, rank, fn))
                break
    return min(found, key=lambda f: f[:2])[2] if found else None


def _numpys(path):
    """True for a library inside NumPy's install (its wheel's `numpy.libs`, or numpy/)."""
    root = os.path.dirname(os.path.realpath(np.__file__))
    real = os.path.realpath(path)
    return real.startswith(root + os.sep) or real.startswith(root + ".libs" + os.sep)


def blas_threads():
    """The threads NumPy's BLAS may use now, or None when it cannot be told (not OpenBLAS)."""
    global _get_threads
    if _get_threads is _UNSET:
        with _LOCK:
            if _get_threads is _UNSET:
                _get_threads = _loaded_openblas()
    return None if _get_threads is None else int(_get_threads())


def matmul2d(a, b):
    """np.matmul(a, b) of two matrices, in row blocks that BLAS runs on this thread when the
    product is too small for its threads to pay (see the module docstring)."""
    m, k = a.shape
    n = b.shape[1]
    mnk = m * k * n
    if not SERIAL_MIN < mnk <= SERIAL_MAX or k * n * MIN_ROWS > SERIAL_MIN or \
            a.dtype != b.dtype or \
            a.dtype.char not in "fdFD" or k != b.shape[0] or not _threaded():
        return np.matmul(a, b)
    if k <= COPY_MAX_K and not b.flags.c_contiguous and a.flags.c_contiguous:
        b = np.ascontiguousarray(b)   # NOTE: each block would pack the strided b again
    rows = SERIAL_MIN // (k * n)
    out = np.empty((m, n), a.dtype)
    for i in range(0, m, rows):
        np.matmul(a[i:i + rows], b, out=out[i:i + rows])
    return out


GEMV_SERIAL = 2304 * 4   # m*n up to which OpenBLAS's gemv stays on the calling thread


def matvec(m, v):
    """m @ v (a matrix by a vector), in row blocks BLAS runs on this thread when it is small
    (each output element is the same dot product of a whole row)."""
    return _vector_product(m, v, True)


def vecmat(v, m):
    """v @ m (a vector by a matrix), in column blocks BLAS runs on this thread when it is small
    (each output element is the same dot product of a whole column)."""
    return _vector_product(m, v, False)


def _vector_product(m, v, by_rows):
    r, c = m.shape
    inner = c if by_rows else r
    if r * c <= GEMV_SERIAL or r * c > SERIAL_MAX or inner > GEMV_SERIAL or not _threaded():
        return m @ v if by_rows else v @ m
    step = GEMV_SERIAL // inner
    out = np.empty(r if by_rows else c, np.result_type(m, v))
    for i in range(0, out.size, step):
        if by_rows:
            np.matmul(m[i:i + step], v, out=out[i:i + step])
        else:
            np.matmul(v, m[:, i:i + step], out=out[i:i + step])
    return out


def _threaded():
    threads = blas_threads()
    return threads is not None and threads > 1


def sum_nt(g, y):
    """sum over b of g[b] @ y[b].T for stacks g (B, m, n) and y (B, k, n): one (m, k) output
    that each product is added into, in b order, instead of B products kept apart and then
    summed (a convolution's weight gradient, the CNN's (64, 64, 256) by (64, 288, 256)).
    Products through matmul2d, so on NumPy's own BLAS with its thread setting: SciPy's gemm
    with beta = 1 was 1.5 ms faster here (9.6 against 11.1 ms), but it is a second OpenBLAS
    with its own thread pool, which neither `threadpoolctl` limits set before it loaded nor
    `dualgrad bench`'s one BLAS thread reach, and whose threads spin after each call. The
    values are the same bits. Other dtypes or layouts: np.matmul, then the sum."""
    b, m, n = g.shape
    k = y.shape[1]
    if g.dtype != y.dtype or g.dtype.char not in "fd" or y.shape != (b, k, n) or \
            not b or not m * n * k or m * n * k <= SMALL_PRODUCT:
        # NOTE: small products: one stacked matmul and a sum beat B calls from Python (the
        # small bench CNN's (64, 16, 72, 16) weight gradient: 65 against 176 µs; at 2.6k
        # multiply-adds per image 13 against 121); from ~0.5M per image the loop wins
        return np.matmul(g, np.swapaxes(y, -1, -2)).sum(axis=0)
    # NOTE: summed as its transpose, y_b @ g_b^T (k, m), and transposed once at the end: with
    # y_b's long rows as the left operand OpenBLAS packs less; the CNN's three weight gradients
    # (B 64; m, k, n = 32, 27, 1024 / 64, 288, 256 / 128, 576, 64) took 61-77 GFLOP/s as
    # g_b @ y_b^T and 73-84 so, on one thread
    out = matmul2d(y[0], g[0].T)
    for i in range(1, b):
        out += matmul2d(y[i], g[i].T)
    return np.ascontiguousarray(out.T)

"""ops/gemm.py: products cut into blocks that BLAS runs on the calling thread, where its
threads do not pay. The blocks must give NumPy's product (up to rounding: OpenBLAS picks its
kernel by shape), be used only when the BLAS has threads, and change no thread setting."""
import os
import subprocess
import sys

import numpy as np
import pytest

from dualgrad.ops import gemm

SHAPES = [(512, 32, 96), (96, 512, 32), (1000, 30, 50), (128, 64, 128), (300, 7, 200)]


def _pair(m, k, n, dtype, transposed, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((n, k)).astype(dtype).T if transposed else \
        rng.standard_normal((k, n)).astype(dtype)
    return a, b


@pytest.fixture
def threaded(monkeypatch):
    """As if NumPy's BLAS had two threads; counts the block products run."""
    calls = []
    real = np.matmul

    def counting(*args, **kw):
        if "out" in kw:
            calls.append(args[0].shape)
        return real(*args, **kw)
    monkeypatch.setattr(gemm, "_threaded", lambda: True)
    monkeypatch.setattr(gemm.np, "matmul", counting)
    return calls


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 2e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_blocks_give_numpys_product(shape, transposed, dtype, rtol, threaded):
    a, b = _pair(*shape, dtype, transposed)
    want = np.matmul(a, b)
    got = gemm.matmul2d(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())
    m, k, n = shape
    assert len(threaded) == -(-m // (gemm.SERIAL_MIN // (k * n)))   # the blocks did run
    assert all(np.prod(s) * n <= gemm.SERIAL_MIN for s in threaded)


@pytest.mark.parametrize("rows,cols", [(512, 32), (2048, 8), (64, 288), (4096, 4), (300, 100)])
def test_vector_products_in_blocks_give_numpys(rows, cols, threaded):
    m = np.random.default_rng(1).standard_normal((rows, cols)).astype(np.float32)
    ones_c, ones_r = np.ones(cols, np.float32), np.ones(rows, np.float32)
    for got, want in ((gemm.matvec(m, ones_c), m @ ones_c), (gemm.vecmat(ones_r, m), ones_r @ m)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * np.abs(want).max())
    assert threaded   # blocks ran


def test_small_large_and_odd_products_are_numpys_own(threaded):
    for a, b in [_pair(8, 8, 8, np.float32, False),                  # below SERIAL_MIN
                 (np.ones((300, 400), np.float32), np.ones((400, 300), np.float32)),  # big
                 (np.ones((600, 600), np.int64), np.ones((600, 3), np.int64)),          # ints
                 (np.ones((600, 600), np.float32), np.ones((600, 3), np.float64))]:     # mixed
        np.testing.assert_array_equal(gemm.matmul2d(a, b), np.matmul(a, b))
    assert threaded == []


def test_one_thread_or_an_unknown_blas_runs_numpys_product(monkeypatch):
    calls = []
    monkeypatch.setattr(gemm, "blas_threads", lambda: calls.append(1) or 1)
    a, b = _pair(512, 32, 96, np.float32, True)
    np.testing.assert_array_equal(gemm.matmul2d(a, b), np.matmul(a, b))
    monkeypatch.setattr(gemm, "blas_threads", lambda: None)
    np.testing.assert_array_equal(gemm.matmul2d(a, b), np.matmul(a, b))
    assert calls == [1]


def test_blas_threads_reads_the_setting_and_changes_nothing():
    """In a fresh process: OPENBLAS_NUM_THREADS=1 is read back as 1 where OpenBLAS is found,
    and asking loads no new library (the process's maps list the same files before and after)."""
    code = ("import ctypes\n"
            "from dualgrad.ops import gemm\n"
            "maps = lambda: {l.split()[-1] for l in open('/proc/self/maps')\n"
            "                if len(l.split()) == 6}\n"
            "before = maps()\n"
            "n = gemm.blas_threads()\n"
            "assert maps() == before, maps() ^ before\n"
            "print(n)\n")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() in ("1", "None")


def test_a_product_too_wide_for_eight_row_blocks_is_left_whole(threaded):
    # k * n = 256 * 1024: a block under SERIAL_MIN would be one row (a matrix-vector product)
    a, b = _pair(64, 256, 1024, np.float32, False)
    np.testing.assert_array_equal(gemm.matmul2d(a, b), np.matmul(a, b))
    assert threaded == []
    a, b = _pair(64, 64, 256, np.float32, False)    # 16-row blocks still run
    gemm.matmul2d(a, b)
    assert threaded and all(s[0] >= gemm.MIN_ROWS for s in threaded)


def test_numpys_own_openblas_is_the_one_asked():
    """SciPy's wheel maps a second OpenBLAS with its own thread count; blas_threads() must read
    NumPy's, whichever the loader mapped first (each set here to a different count)."""
    code = ("import ctypes, numpy as np, scipy.linalg\n"
            "scipy.linalg.blas.sgemm(1.0, np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))\n"
            "libs = [l.split()[-1] for l in open('/proc/self/maps') if 'openblas' in l.lower()]\n"
            "libs = list(dict.fromkeys(libs))\n"
            "assert len(libs) == 2, libs\n"
            "from dualgrad.ops import gemm\n"
            "for path in libs:\n"
            "    lib = ctypes.CDLL(path)\n"
            "    mine = gemm._numpys(path)\n"
            "    for name in ('scipy_openblas_set_num_threads64_', 'scipy_openblas_set_num_threads',\n"
            "                 'openblas_set_num_threads64_', 'openblas_set_num_threads'):\n"
            "        if hasattr(lib, name):\n"
            "            getattr(lib, name)(1 if mine else 3)\n"
            "            break\n"
            "print(gemm.blas_threads())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    if "AssertionError" in out.stderr and "libs" in out.stderr:
        pytest.fail(f"expected NumPy's and SciPy's OpenBLAS in one process: {out.stderr}")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"

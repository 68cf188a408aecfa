"""The kernel cache as a trust boundary: what is in the cache directory never runs unless it
is exactly what the code generator produced, and no cache problem crashes a run."""
from __future__ import annotations

import os
import sys
import tempfile
import warnings

import numpy as np
import pytest

from dualgrad import graph
from dualgrad.compiler import fused_kernel, kernel_cache
from dualgrad.compiler.fused_kernel import compile_fused
from dualgrad.compiler.fused_spec import FusedSpec
from dualgrad.compiler.kernel_cache import CacheWarning
from dualgrad.comparisons.cli import main

X = np.arange(6, dtype=np.float32).reshape(2, 3)


def spec(k=2.5):
    return FusedSpec(inputs=(("float32", "full"),),
                     nodes=(("in", 0), ("const", k, "float32"),
                            ("ew", "({0} * {1})", (0, 1), "float32"),
                            ("ew", "exp({0})", (2,), "float32")),
                     outputs=(3,))


def forget():
    """What a new process starts from: no kernel in memory, nothing imported."""
    fused_kernel._KERNELS.clear()
    for name in [m for m in sys.modules if m.startswith(kernel_cache.PREFIX)]:
        del sys.modules[name]
    kernel_cache._STORES.clear()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("DUALGRAD_CACHE_DIR", str(root))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", None)   # NOTE: gettempdir() caches TMPDIR
    forget()
    yield root
    forget()


def run_kernel(k=2.5):
    fn = compile_fused(spec(k))
    return fn, fn(2, 3, X)[0]


def test_planted_line_never_runs_and_file_is_restored(cache, monkeypatch):
    fn, _ = run_kernel()
    path = fn.module_path
    original = open(path).read()
    with open(path, "a") as f:
        f.write("\nimport os\nos.environ['DUALGRAD_PWNED'] = '1'\n")
    monkeypatch.delenv("DUALGRAD_PWNED", raising=False)
    forget()
    _, y = run_kernel()
    assert "DUALGRAD_PWNED" not in os.environ
    np.testing.assert_allclose(y, np.exp(X * 2.5), rtol=1e-6)
    assert open(path).read() == original


def test_changed_constant_does_not_change_results(cache):
    fn, _ = run_kernel()
    text = open(fn.module_path).read()
    assert "np.float32(2.5)" in text
    with open(fn.module_path, "w") as f:
        f.write(text.replace("np.float32(2.5)", "np.float32(2.501)"))
    forget()
    _, y = run_kernel()
    np.testing.assert_allclose(y, np.exp(X * 2.5), rtol=1e-6)


def test_truncated_module_is_replaced(cache):
    fn, _ = run_kernel()
    text = open(fn.module_path).read()
    with open(fn.module_path, "w") as f:
        f.write(text[:text.index("def kernel_parallel")])
    forget()
    fn2, y = run_kernel()
    np.testing.assert_allclose(y, np.exp(X * 2.5), rtol=1e-6)
    assert open(fn2.module_path).read() == text


def test_corrupt_numba_index_is_replaced(cache):
    fn, _ = run_kernel()
    pyc = cache / "kernels" / "__pycache__"
    (index,) = [p for p in pyc.glob("*kernel_serial*.nbi")]
    index.write_bytes(index.read_bytes()[:20])
    forget()
    fn2, y = run_kernel()
    np.testing.assert_allclose(y, np.exp(X * 2.5), rtol=1e-6)
    assert fn2.cache_hit is False
    forget()
    assert run_kernel()[0].cache_hit is True    # the entry was written again


def test_numba_cache_stays_in_the_checked_directory(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    run_kernel()
    assert list((cache / "kernels" / "__pycache__").glob(kernel_cache.PREFIX + "*.nbi"))
    assert not (tmp_path / "numba").exists()


@pytest.mark.parametrize("make_bad", ["group_writable", "other_owner", "file"])
def test_untrusted_cache_dir_falls_back_to_private_dir(cache, make_bad):
    if make_bad == "file":
        cache.write_text("squatter")
    else:
        (cache / "kernels").mkdir(parents=True)
        if make_bad == "group_writable":
            os.chmod(cache / "kernels", 0o777)
        elif os.getuid() == 0:
            os.chown(cache, 4242, 4242)
        else:
            pytest.skip("needs root to make a directory owned by someone else")
    with pytest.warns(CacheWarning, match="not used") as rec:
        fn, y = run_kernel()
    assert len(rec) == 1 and "\n" not in str(rec[0].message)
    assert not fn.module_path.startswith(str(cache))
    assert kernel_cache.untrusted(os.path.dirname(fn.module_path)) is None
    np.testing.assert_allclose(y, np.exp(X * 2.5), rtol=1e-6)


def test_squatted_shared_temp_dir_is_not_used(cache, tmp_path):
    cache.write_text("squatter")
    shared = tmp_path / "tmp" / f"dualgrad-{os.getuid()}"
    shared.mkdir()
    os.chmod(shared, 0o777)          # another local user created it first
    with pytest.warns(CacheWarning, match="private directory"):
        fn, _ = run_kernel()
    assert not fn.module_path.startswith(str(shared))


def test_session_runs_fused_with_file_squatting_on_cache(cache):
    cache.write_text("squatter")
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(graph.float32, (2, 3))
        y = graph.exp(x * 2.0) + 1.0
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        with graph.Session(g) as s:
            got = s.run(y, {x: X})
            assert s.last_report["fuse"].details["groups"] == 1
    np.testing.assert_allclose(got, np.exp(X * 2.0) + 1.0, rtol=1e-6)


def test_read_only_cache_still_fuses(cache, monkeypatch):
    fn, _ = run_kernel()
    forget()

    write, tmpfile = kernel_cache._write, tempfile.TemporaryFile

    def read_only(real):
        def call(*a, **k):
            where = str(a[0] if a else k.get("dir"))
            if where.startswith(str(cache)):
                raise PermissionError(13, "Read-only file system")
            return real(*a, **k)
        return call
    monkeypatch.setattr(kernel_cache, "_write", read_only(write))
    monkeypatch.setattr(tempfile, "TemporaryFile", read_only(tmpfile))
    with pytest.warns(CacheWarning, match="numba's disk cache"):
        fn2, y = run_kernel()          # the entry verifies, so nothing needs writing
    assert fn2.module_path == fn.module_path
    np.testing.assert_allclose(y, np.exp(X * 2.5), rtol=1e-6)
    forget()
    with pytest.warns(CacheWarning):
        _, y = run_kernel(3.0)         # a new kernel cannot be written there: private dir
    np.testing.assert_allclose(y, np.exp(X * 3.0), rtol=1e-6)


def test_cache_info_and_clear(cache, capsys, tmp_path):
    run_kernel()
    keep = cache / "kernels" / "mine.txt"
    keep.write_text("not ours")
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert str(cache) in out and "entries" in out and "1" in out
    info = kernel_cache.info()
    assert info["entries"] == 1 and info["trusted"] and info["bytes"] > 0
    assert main(["cache", "clear"]) == 0
    assert kernel_cache.info()["entries"] == 0 and kernel_cache.info()["numba_files"] == 0
    assert keep.exists()
    capsys.readouterr()

"""The on-disk kernel cache, treated as a trust boundary.

Fused kernels are `.py` modules, and numba keeps their machine code in index/data files
that it reads back with pickle: whoever can write either can run code in every process
that uses the cache. So:

* a directory is used only if it is owned by the current user and not writable by group
  or others (as ssh requires of ~/.ssh); the cache's root, `kernels/` and numba's
  `kernels/__pycache__/` are each checked. The places tried, in order: the configured
  root (`cache_dir()`), then `$TMPDIR/dualgrad-<uid>` (created 0700; refused if it is a
  symlink or not private), then a fresh `tempfile.mkdtemp()` directory for this process,
  with one warning saying why;
* a kernel module is never imported from the file: the file's bytes must equal the source
  the code generator produced (else the file is rewritten), and the module is executed from
  that in-memory source (the file only gives numba a name and a path for its cache);
* numba's cache files for our kernels live only in the checked `kernels/__pycache__/`
  (whatever NUMBA_CACHE_DIR says): our dispatchers get a cache locator of their own;
* any failure to read, write or import degrades: a write failure moves this process to a
  private directory (one warning), a numba cache that cannot be created or read compiles
  in memory, a corrupt numba entry is deleted and recompiled. Nothing here raises to the
  user except through `CodegenError` (the group then runs unfused, with the reason in the
  optimiser's report).

`info()` and `clear()` back `dualgrad cache info` / `dualgrad cache clear`.
"""
from __future__ import annotations

import os
import stat
import sys
import tempfile
import threading
import warnings
from pathlib import Path

PREFIX = "dualgrad_fused_"
_LOCK = threading.RLock()
_STORES: dict[str, "Store"] = {}   # configured root -> the store in use for it
_WARNED: set = set()


class CacheWarning(UserWarning):
    """The kernel cache could not be used as configured; what happens instead is said."""


def cache_dir() -> Path:
    """$DUALGRAD_CACHE_DIR, else $XDG_CACHE_HOME/dualgrad, else ~/.cache/dualgrad."""
    if os.environ.get("DUALGRAD_CACHE_DIR"):
        return Path(os.environ["DUALGRAD_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dualgrad"


def untrusted(path, strict=False) -> str | None:
    """Why `path` may not hold kernels (None when it may): it must be a directory owned by
    us, not writable by group/others; strict (for a shared temp dir): no symlink, mode 0700."""
    try:
        st = os.lstat(path) if strict else os.stat(path)
    except OSError as e:
        return f"{path}: {e.strerror or e}"
    if strict and stat.S_ISLNK(st.st_mode):
        return f"{path} is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if st.st_uid != os.getuid():
        return f"{path} is owned by uid {st.st_uid}, not by this user ({os.getuid()})"
    bad = 0o077 if strict else 0o022
    if st.st_mode & bad:
        return f"{path} is writable by {'group/others' if st.st_mode & 0o022 else 'others'} " \
               f"(mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _make_private(path: Path, strict=False) -> str | None:
    """Create `path` (0700) if missing; the reason it cannot be used, or None."""
    try:
        path.mkdir(mode=0o700, parents=not strict, exist_ok=True)
    except OSError as e:
        return f"cannot create {path}: {e.strerror or e}"
    return untrusted(path, strict)


class Store:
    """One checked directory of kernels: `<root>/kernels` (and numba's `__pycache__` in it)."""

    def __init__(self, root: Path, private: bool):
        self.root, self.private = Path(root), private
        self.kernels = self.root / "kernels"

    def check(self, strict=False) -> str | None:
        return _make_private(self.root, strict) or _make_private(self.kernels)


def _warn_once(key, message):
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(message, CacheWarning, stacklevel=4)


def _private(configured: Path, why: str) -> Store:
    st = Store(Path(tempfile.mkdtemp(prefix="dualgrad-kernels-")), private=True)
    st.kernels.mkdir(mode=0o700)
    _warn_once(("private", str(configured)),
               f"dualgrad: kernel cache {configured} not used ({why}); compiling into the "
               f"private directory {st.root} for this process")
    return st


def store() -> Store:
    """The checked store for the configured cache root (resolved once per root)."""
    configured = cache_dir()
    key = str(configured)
    with _LOCK:
        st = _STORES.get(key)
        if st is None:
            st = _STORES[key] = _resolve(configured)
        return st


def _resolve(configured: Path) -> Store:
    why = Store(configured, False).check()
    if why is None:
        return Store(configured, False)
    shared = Path(tempfile.gettempdir()) / f"dualgrad-{os.getuid()}"
    if Store(shared, False).check(strict=True) is None:
        _warn_once(("shared", str(configured)),
                   f"dualgrad: kernel cache {configured} not used ({why}); using {shared}")
        return Store(shared, False)
    return _private(configured, why)


def fall_back(why: str) -> Store:
    """Move this process to a private store after a failure in the current one."""
    configured = cache_dir()
    with _LOCK:
        st = _STORES.get(str(configured))
        if st is None or not st.private:
            st = _STORES[str(configured)] = _private(configured, why)
        return st


# -- kernel modules ----------------------------------------------------------------------------
def _matches(path: Path, data: bytes) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(data) + 1) == data
    except OSError:
        return False


def _write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        _unlink(tmp)
        raise


def _unlink(path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def place(name: str, source: str) -> Path:
    """A file `<kernels>/<name>.py` whose bytes are exactly `source` (rewritten when they
    are not: a planted line or a truncated file is replaced, never imported)."""
    data = source.encode()
    st = store()
    for attempt in range(2):
        path = st.kernels / f"{name}.py"
        if _matches(path, data):
            return path
        try:
            _write(path, data)
            return path
        except OSError as e:
            if attempt:
                raise
            st = fall_back(f"cannot write {path}: {e.strerror or e}")
    raise AssertionError("unreachable")


def load(name: str, source: str, path: Path):
    """The module `name`, executed from `source` (whose bytes `path` holds), registered in
    sys.modules so numba can find it; its kernels cache into `path`'s checked __pycache__."""
    mod = sys.modules.get(name)
    if mod is not None and getattr(mod, "__dualgrad_source__", None) == source:
        return mod
    import types
    mod = types.ModuleType(name)
    mod.__file__, mod.__dualgrad_source__ = str(path), source
    sys.modules[name] = mod
    try:
        exec(compile(source, str(path), "exec"), mod.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return mod


def attach_cache(dispatcher) -> str | None:
    """Give a numba dispatcher a disk cache in its file's checked __pycache__; returns why
    it has none (it then compiles in memory)."""
    try:
        dispatcher._cache = _numba_cache_class()(dispatcher.py_func)
    except Exception as e:  # noqa: BLE001 - numba raises RuntimeError when no locator fits
        return f"{type(e).__name__}: {str(e)[:120]}"
    return None


def warn_uncached(path: Path, why: str) -> None:
    _warn_once(("uncached", str(path.parent)),
               f"dualgrad: numba's disk cache cannot be used in {path.parent / '__pycache__'} "
               f"(not writable or not private: {why}); kernels compile in memory")


def compile_cached(dispatcher, sig) -> None:
    """dispatcher.compile(sig); a numba cache entry that cannot be read (truncated, corrupt)
    is deleted and the signature compiled afresh."""
    try:
        dispatcher.compile(sig)
        return
    except Exception:
        cache = getattr(dispatcher, "_cache", None)
        path = getattr(cache, "cache_path", None)
        if not path or not getattr(cache, "_dualgrad", False):
            raise
    _purge(Path(path), Path(dispatcher.py_func.__code__.co_filename).stem)
    dispatcher._cache = _numba_cache_class()(dispatcher.py_func)
    dispatcher.compile(sig)


def _purge(pycache: Path, module_stem: str) -> None:
    for f in pycache.glob(f"{module_stem}.*"):
        _unlink(f)


_NUMBA_CACHE = None


def _numba_cache_class():
    """numba's FunctionCache, located only in the kernel file's own checked __pycache__."""
    global _NUMBA_CACHE
    if _NUMBA_CACHE is not None:
        return _NUMBA_CACHE
    from numba.core import caching

    class Locator(caching.InTreeCacheLocator):
        def ensure_cache_path(self):
            why = _make_private(Path(self.get_cache_path()))
            if why is not None:
                raise OSError(why)   # NOTE: numba then finds no locator: compile in memory
            tempfile.TemporaryFile(dir=self.get_cache_path()).close()

    class Impl(caching.CompileResultCacheImpl):
        _locator_classes = [Locator]

    class KernelCache(caching.FunctionCache):
        _impl_class = Impl
        _dualgrad = True

    _NUMBA_CACHE = KernelCache
    return KernelCache


# -- dualgrad cache info / clear ---------------------------------------------------------------
def _ours(kernels: Path):
    """Files in `kernels` that the cache wrote: modules, temporaries, numba's files."""
    if not kernels.is_dir():
        return []
    files = [p for p in kernels.iterdir()
             if p.is_file() and (p.name.startswith(PREFIX) or p.name.startswith("." + PREFIX))]
    pyc = kernels / "__pycache__"
    if pyc.is_dir():
        files += [p for p in pyc.iterdir() if p.is_file() and p.name.startswith(PREFIX)]
    return files


def info() -> dict:
    """Where the cache is, whether it is trusted, its size and entries (for `cache info`)."""
    configured = cache_dir()
    kernels = configured / "kernels"
    files = _ours(kernels)
    why = untrusted(configured) if configured.exists() else None
    why = why or (untrusted(kernels) if kernels.exists() else None)
    return {"location": str(configured), "kernels_dir": str(kernels),
            "exists": kernels.is_dir(), "trusted": why is None, "problem": why,
            "entries": sum(1 for p in files if p.suffix == ".py" and p.parent == kernels),
            "numba_files": sum(1 for p in files if p.parent.name == "__pycache__"),
            "bytes": sum(_size(p) for p in files)}


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


def clear() -> dict:
    """Delete the cache's own files (never anything else in the directory)."""
    configured = cache_dir()
    files = _ours(configured / "kernels")
    removed, freed = 0, 0
    for p in files:
        size = _size(p)
        try:
            p.unlink()
        except OSError:
            continue
        removed += 1
        freed += size
    with _LOCK:
        _STORES.pop(str(configured), None)
    return {"location": str(configured), "removed": removed, "bytes": freed}

"""`dualgrad run --as torch|tf1 [--compile] script.py [args]`: run an unmodified PyTorch or
TF1 script on dualgrad.

An import hook (a finder on `sys.meta_path`, in this process only; nothing is installed
under those names) resolves `import torch`, `torch.nn`, `torch.nn.functional`,
`torch.optim`, `torch.utils.data`, … to `dualgrad.eager`, and `import tensorflow as tf`,
`tensorflow.compat.v1`, `from tensorflow.examples.tutorials.mnist import input_data`, … to
`dualgrad.graph`. A name dualgrad does not have fails as a missing module or attribute.
`torch.compile` is `dualgrad.compiler.compile` there.

`--compile` (torch scripts) runs every top-level `nn.Module` call through
`compiler.compile(module)`; at exit it prints the graph breaks (calls that ran eagerly) with
the lines that caused them, and how many module calls were compiled.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import runpy
import sys
import sysconfig
import types
import warnings

ROOTS = {"torch": {"torch": "dualgrad.eager"},
         "tf1": {"tensorflow": "dualgrad.graph"}}
ALIASES = {"tensorflow.compat.v1": "tensorflow", "tensorflow.compat.v2": "tensorflow"}


def _resolve(target):
    """The dualgrad object a dotted dualgrad path names (modules imported as needed)."""
    root, *parts = target.split(".")
    obj = importlib.import_module(root)
    path = root
    for p in parts:
        path = f"{path}.{p}"
        try:
            obj = getattr(obj, p)
        except AttributeError:
            obj = importlib.import_module(path)
    return obj


class _Proxy(types.ModuleType):
    """A module object standing for a dualgrad object under the reference's name; a package
    (it has a __path__) so that `import torch.nn.functional` can go on below it."""

    def __init__(self, name, target, extra):
        super().__init__(name)
        self.__path__ = []
        self.__dict__["_target"] = target
        self.__dict__.update(extra)

    def __getattr__(self, attr):
        target = self.__dict__["_target"]
        try:
            return getattr(target, attr)
        except AttributeError:
            if not isinstance(target, types.ModuleType) or attr.startswith("__"):
                raise
            try:   # NOTE: `import torch` makes torch.distributed & co. reachable, as here
                return importlib.import_module(f"{target.__name__}.{attr}")
            except ImportError:
                raise AttributeError(f"module {self.__name__!r} has no attribute "
                                     f"{attr!r}") from None

    def __dir__(self):
        return dir(self.__dict__["_target"])


class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, side):
        self.roots = ROOTS[side]
        self.side = side

    def _target(self, fullname):
        fullname = ALIASES.get(fullname, fullname)
        for ref, ours in self.roots.items():
            if fullname == ref or fullname.startswith(ref + "."):
                return ours + fullname[len(ref):]
        return None

    def find_spec(self, fullname, path=None, target=None):
        t = self._target(fullname)
        if t is None:
            return None
        if _from_library():
            return importlib.machinery.ModuleSpec(fullname, _Refuse(), is_package=True)
        try:
            _resolve(t)
        except Exception:  # noqa: BLE001 - not in dualgrad: the import fails as usual
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        t = self._target(spec.name)
        extra = {}
        if t == "dualgrad.eager":
            from dualgrad.compiler import compile as dg_compile
            extra["compile"] = dg_compile
        return _Proxy(spec.name, _resolve(t), extra)

    def exec_module(self, module):
        pass


_LIBRARY_MARKS = ("/site-packages/", "/dist-packages/")
_STDLIB = sysconfig.get_paths()["stdlib"]


def _from_library():
    """True when the import comes from an installed library rather than from the script (or
    the user's own modules): a library that imports torch / tensorflow wants the real one
    (tensorboard, torchvision), which this process does not give it."""
    f = sys._getframe(2)
    while f is not None and (f.f_code.co_filename.startswith("<frozen") or
                             f.f_code.co_filename.startswith(os.path.dirname(importlib.__file__))):
        f = f.f_back
    fn = f.f_code.co_filename if f is not None else ""
    return any(m in fn for m in _LIBRARY_MARKS) or fn.startswith(_STDLIB)


class _Refuse(importlib.abc.Loader):
    """What a library gets for the reference's name under `dualgrad run --as`: ImportError,
    as in an environment without it (tensorboard then uses its own stub, for example)."""

    def create_module(self, spec):
        raise ImportError(f"{spec.name} is not available to installed libraries under "
                          f"`dualgrad run --as` (the script's own imports get dualgrad)",
                          name=spec.name)

    def exec_module(self, module):
        pass


class _CompiledCalls:
    """--compile: each top-level nn.Module call goes through compile(module)."""

    def __init__(self):
        from dualgrad.compiler import compile as dg_compile
        from dualgrad.eager import nn
        self.compile, self.Module = dg_compile, nn.Module
        self.compiled, self.calls, self.depth = {}, 0, 0
        self.original = nn.Module.__call__
        self.record = []   # the run's recorded warnings (set by run())

    def install(self):
        hook = self

        def call(module, *args, **kwargs):
            if hook.depth or kwargs:
                return hook.original(module, *args, **kwargs)
            fn = hook.compiled.get(id(module))
            if fn is None:
                fn = hook.compiled[id(module)] = (module, hook.compile(module))
            hook.depth += 1
            seen, caller = len(hook.record), sys._getframe(1)
            try:
                hook.calls += 1
                return fn[1](*args)
            finally:
                hook.depth -= 1
                for w in hook.record[seen:]:   # NOTE: a break filed at this hook: the call's line
                    if w.filename == __file__:
                        w.filename, w.lineno = caller.f_code.co_filename, caller.f_lineno
        self.Module.__call__ = call


def run(side, script, args, compile_calls=False, out=sys.stderr):
    """Run `script` as __main__ with sys.argv = [script, *args]; returns its exit status."""
    finder = Finder(side)
    sys.meta_path.insert(0, finder)
    # NOTE: tensorboard (under both summary writers) would take the script's `tensorflow`,
    # i.e. dualgrad: its documented switch makes it use its own TF stub instead
    notf = "tensorboard.compat.notf" not in sys.modules
    if notf:
        sys.modules["tensorboard.compat.notf"] = types.ModuleType("tensorboard.compat.notf")
    old_argv = sys.argv
    sys.argv = [script, *args]
    hook, caught = None, []
    if compile_calls:
        if side != "torch":
            raise ValueError("--compile applies to torch scripts (nn.Module calls)")
        hook = _CompiledCalls()
        hook.install()
    status = 0
    try:
        with warnings.catch_warnings(record=compile_calls) as record:
            if compile_calls:
                warnings.simplefilter("always")
                hook.record = record
            try:
                runpy.run_path(script, run_name="__main__")
            except SystemExit as e:
                status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            caught = list(record or [])
    finally:
        sys.argv = old_argv
        sys.meta_path.remove(finder)
        for name in [n for n, m in sys.modules.items() if isinstance(m, _Proxy)]:
            del sys.modules[name]   # NOTE: `torch` means dualgrad for the script only
        if notf:
            sys.modules.pop("tensorboard.compat.notf", None)
        if hook is not None:
            hook.Module.__call__ = hook.original
    if compile_calls:
        _report(hook, caught, out)
    return status


def _report(hook, caught, out):
    breaks = [w for w in caught if "graph break" in str(w.message)]
    for w in caught:
        if w not in breaks:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    seen = {}
    for w in breaks:   # NOTE: the reason without the warning's own (possibly hook) location
        name, _, rest = str(w.message).partition(": graph break at ")
        seen.setdefault((w.filename, w.lineno), f"{name}: {rest.partition(': ')[2] or rest}")
    print(f"dualgrad --compile: {hook.calls} module calls through compile(), "
          f"{len(seen)} graph break(s)", file=out)
    for (f, line), msg in seen.items():
        print(f"  {f}:{line}: {msg}", file=out)

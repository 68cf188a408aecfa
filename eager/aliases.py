"""NumPy's keyword names that torch's argument parser takes as aliases: `axis=` for `dim=`
and `keepdims=` for `keepdim=` (`x.sum(axis=1)`, `torch.cat(ts, axis=0)`,
`x.mean(0, keepdims=True)` all work in torch). Every Tensor method and torch-level function
here with a `dim` or `keepdim` parameter gets them; torch.nn.functional's Python functions
do not (nor do torch's)."""
from __future__ import annotations

import functools
import inspect

_ALIASES = (("axis", "dim"), ("keepdims", "keepdim"))


def _wrap(fn, renames):
    @functools.wraps(fn)
    def call(*args, **kw):
        if kw:
            for alias, name in renames:
                if alias in kw:
                    if name in kw:
                        raise TypeError(f"{fn.__name__}() got both {name}= and its NumPy "
                                        f"alias {alias}=")
                    kw[name] = kw.pop(alias)
        return fn(*args, **kw)
    call.__numpy_aliases__ = True
    return call


def _renames(fn):
    if not callable(fn) or isinstance(fn, type) or getattr(fn, "__numpy_aliases__", False):
        return ()
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return ()
    return tuple((a, n) for a, n in _ALIASES if n in params and a not in params)


def accept_numpy_names(namespace, cls):
    """Wrap the functions of `namespace` (a module's globals) and the methods of `cls`."""
    for name, fn in list(namespace.items()):
        if not name.startswith("_") and inspect.isfunction(fn):
            renames = _renames(fn)
            if renames:
                namespace[name] = _wrap(fn, renames)
    for klass in cls.__mro__:
        for name, fn in list(vars(klass).items()):
            if name.startswith("_") or not inspect.isfunction(fn) or \
                    getattr(cls, name, None) is not fn:
                continue
            renames = _renames(fn)
            if renames:
                setattr(cls, name, _wrap(fn, renames))

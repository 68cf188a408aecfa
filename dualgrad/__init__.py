"""dualgrad: one deep-learning framework, two front doors.

>>> from dualgrad import eager, graph, compiler
>>> import dualgrad.eager.nn as nn
>>> import dualgrad.graph as tf

The engines live in the repository's top-level folders (ops/, eager/, graph/, compiler/,
comparisons/); pyproject.toml maps each of them under this package. `import dualgrad` is
cheap: a subpackage loads on first use (`dualgrad.eager`), never numba or jax up front.
"""
import importlib

__version__ = "0.2.0"
__all__ = ["ops", "eager", "graph", "compiler", "comparisons", "__version__"]

_SUBPACKAGES = frozenset(__all__[:-1])


def __getattr__(name):
    # NOTE: PEP 562 lazy attribute: `dualgrad.eager` imports the engine on first use.
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _SUBPACKAGES)

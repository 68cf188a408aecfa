"""The same four models, each written twice: `*_eager.py` (PyTorch style) and `*_graph.py`
(TensorFlow 1.x style). Read a pair side by side.

`load(name, mode)` returns the module of one version; `MODELS` lists the names.

>>> from dualgrad.comparisons import models
>>> models.MODELS
('mlp', 'cnn', 'rnn', 'transformer')
"""
from __future__ import annotations

import importlib

MODELS = ("mlp", "cnn", "rnn", "transformer")
MODES = ("eager", "graph")


def load(name: str, mode: str):
    """The module `comparisons.models.{name}_{mode}`."""
    if name not in MODELS:
        raise KeyError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}")
    if mode not in MODES:
        raise KeyError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    return importlib.import_module(f"{__name__}.{name}_{mode}")


def make_trainer(model, mode, seed=0, optimize=True, weights=None):
    """A trainer of `model` in `mode` (eager, graph or compiled) from the shared weights."""
    w = weights if weights is not None else load(model, "eager").initial_weights(seed)
    if mode == "graph":
        return load(model, "graph").build(weights=w, optimize=optimize)
    return load(model, "eager").build(weights=w, compiled=mode == "compiled")

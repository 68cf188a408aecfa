"""Grad mode: whether ops record a tape (torch's no_grad, enable_grad, set_grad_enabled,
inference_mode), below the package root so that optim and nn import it without a cycle.

>>> from dualgrad import eager
>>> with eager.no_grad():
...     eager.is_grad_enabled()
False
"""
from __future__ import annotations

import builtins
from contextlib import contextmanager

from .core import _GRAD

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled"]


@contextmanager
def no_grad():
    """Ops inside record no tape (for evaluation and parameter updates)."""
    prev = _GRAD.enabled
    _GRAD.enabled = False
    try:
        yield
    finally:
        _GRAD.enabled = prev


@contextmanager
def enable_grad():
    prev = _GRAD.enabled
    _GRAD.enabled = True
    try:
        yield
    finally:
        _GRAD.enabled = prev


class set_grad_enabled:
    """Turn grad mode on or off: at once as a call, or for a `with` block (torch's both forms)."""

    def __init__(self, mode):
        self.prev = _GRAD.enabled
        _GRAD.enabled = builtins.bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _GRAD.enabled = self.prev


def inference_mode(mode=True):
    """torch.inference_mode: here the same as no_grad() (nothing is recorded)."""
    return no_grad() if mode else enable_grad()


def is_grad_enabled():
    return _GRAD.enabled

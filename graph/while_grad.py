"""Gradients through `while_loop` (filled in below)."""
from __future__ import annotations

from .errors import UnimplementedError


def while_vjp(g, *inputs, out, needs, **attrs):
    raise UnimplementedError(f"gradients through while_loop '{out.node.name}' are not "
                             f"supported yet", node=out.node)

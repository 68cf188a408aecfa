"""The declared protocol between eager and the interpreters that record it (eager/effects.py):
compile()'s Trace and eager.check's Check implement every member with a signature that takes
the declared arguments, and eager calls nothing on a trace that is not declared.

A static scan of eager/ (one AST pass) and two classes: well under a second.
"""
from __future__ import annotations

import ast
import inspect

import pytest

from dualgrad.compiler.tracer import Trace
from dualgrad.eager.checking import Check
from dualgrad.eager.effects import CheckEffects, TraceEffects, members
from tests.imports import ROOT

TRACE_NAMES = {"tr", "trace"}   # how eager names a trace it got from current_trace()


@pytest.mark.parametrize("impl, protocol", [(Trace, TraceEffects), (Check, CheckEffects)])
def test_the_interpreter_implements_the_protocol(impl, protocol):
    for name in members(protocol):
        declared = getattr(protocol, name, None)
        if not callable(declared):   # NOTE: an attribute: set in __init__
            assert name in inspect.getsource(impl.__init__), f"{impl.__name__}.{name}"
            continue
        mine = getattr(impl, name, None)
        assert callable(mine), f"{impl.__name__} lacks {name}"
        params = list(inspect.signature(declared).parameters.values())
        args = [object()] * sum(p.default is p.empty for p in params)
        kwargs = {p.name: object() for p in params if p.default is not p.empty}
        inspect.signature(mine).bind(*args, **kwargs)   # raises TypeError if it cannot


def _used_on_traces():
    """{name: [file:line]} of the members eager reads from a trace object."""
    out = {}
    for path in sorted((ROOT / "eager").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            name = None
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id in TRACE_NAMES:
                name = node.attr
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
                    "getattr", "hasattr") and isinstance(node.args[1], ast.Constant) and (
                    "trace" in ast.unparse(node.args[0]) or ast.unparse(node.args[0]) in TRACE_NAMES):
                name = node.args[1].value   # getattr(tr, "steps"), getattr(current_trace(), ...)
            if name is not None:
                out.setdefault(name, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return out


def test_eager_calls_only_declared_members():
    declared = set(members(TraceEffects)) | set(members(CheckEffects))
    used = _used_on_traces()
    assert {"steps", "defer_step", "host_data", "stepped"} <= set(used)   # the scan sees them
    undeclared = {n: w for n, w in used.items() if n not in declared}
    assert not undeclared, f"declare these in eager/effects.py or stop using them: {undeclared}"

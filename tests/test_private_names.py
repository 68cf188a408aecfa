"""Layering at the level of attributes: no package touches another package's underscore names.

tests/test_architecture_doc.py checks which package imports which; this checks what a package
does with what it imported. A name `_x` belongs to the packages that define it: a function,
class or module-level name `_x`, a class-body name, a `__slots__` entry, or `self._x = ...`
(in a class whose bases are the package's own or outside the project: a subclass of another
package's class, compile()'s tracing Tensor, does not make the name its own). A package touches
another's name when it imports `_x` from it, or reads or writes `obj._x` (obj not self/cls)
for an `_x` that another package defines and it does not.

The touches that remain are the rows of KNOWN_TOUCHES, each with its reason: a new one fails,
and so does a row whose touches are gone (the table only shrinks). Static, one AST pass over
the project's files: about 2 s.
"""
from __future__ import annotations

import ast
import collections
import functools

from tests.imports import PACKAGES, ROOT

KNOWN_TOUCHES = {}


def _private(name):
    return name.startswith("_") and not name.startswith("__")


@functools.lru_cache(maxsize=1)
def _package_files():
    return [(pkg, path, ast.parse(path.read_text()))
            for pkg in PACKAGES for path in sorted((ROOT / pkg).rglob("*.py"))]


def _foreign_names(tree, pkg):
    """Names imported from another project package (their classes' subclasses own nothing)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level:
            top = (node.module or "").removeprefix("dualgrad.").split(".")[0]
            if top in PACKAGES and top != pkg:
                out.update(a.asname or a.name for a in node.names)
    return out


def _slots(cls):
    return {c.value for n in cls.body if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__slots__" for t in n.targets)
            for c in ast.walk(n.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)}


def _class_defs(cls, foreign):
    """A class's underscore names; a subclass of another package's class owns its new slots only."""
    names = _slots(cls)
    if not {ast.unparse(b).split(".")[0] for b in cls.bases} & foreign:
        names.update(n.attr for n in ast.walk(cls)
                     if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
                     and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"))
        names.update(n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)))
        names.update(t.id for n in cls.body if isinstance(n, ast.Assign) for t in n.targets
                     if isinstance(t, ast.Name))
    return {n for n in names if _private(n)}


@functools.lru_cache(maxsize=1)
def definitions():
    """{package: underscore names it defines}."""
    out = collections.defaultdict(set)
    for pkg, _, tree in _package_files():
        foreign = _foreign_names(tree, pkg)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                out[pkg] |= _class_defs(node, foreign)
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and _private(node.name):
                out[pkg].add(node.name)
        for node in tree.body:
            if isinstance(node, ast.Assign):   # NOTE: `_x = ...` and `Cls._x = ...` (own Cls)
                out[pkg].update(t.id for t in node.targets
                                if isinstance(t, ast.Name) and _private(t.id))
                out[pkg].update(t.attr for t in node.targets
                                if isinstance(t, ast.Attribute) and _private(t.attr)
                                and ast.unparse(t.value) not in foreign)
    return out


@functools.lru_cache(maxsize=1)
def touches():
    """{(package, name): {file: count}} of another package's underscore names used."""
    defs, out = definitions(), collections.defaultdict(collections.Counter)
    for pkg, path, tree in _package_files():
        where = str(path.relative_to(ROOT))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom) and not node.level:
                top = (node.module or "").removeprefix("dualgrad.").split(".")[0]
                if top in PACKAGES and top != pkg:
                    names = [a.name for a in node.names if _private(a.name)]
                    out.update({(pkg, n): collections.Counter({where: 1}) for n in names})
                    names = []
            elif isinstance(node, ast.Attribute) and _private(node.attr) and not (
                    isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                names = [node.attr]
            for n in names:
                if n not in defs[pkg] and any(n in defs[q] for q in PACKAGES if q != pkg):
                    out[(pkg, n)][where] += 1
    return out


def test_no_package_touches_anothers_underscore_names():
    found = touches()
    new = {k: dict(v) for k, v in found.items() if k not in KNOWN_TOUCHES}
    assert not new, ("these use another package's underscore names; give the owner a public "
                     f"accessor instead: {new}")


def test_known_touches_only_shrink():
    gone = sorted(set(KNOWN_TOUCHES) - set(touches()))
    assert not gone, f"these touches are gone: delete their KNOWN_TOUCHES rows: {gone}"

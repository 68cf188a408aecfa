"""`tf.nest` (and TF1's `tf.contrib.framework.nest`): nested structures of lists, tuples,
namedtuples and dicts, flattened in TF's order (dicts by sorted key), rebuilt, and mapped,
with TF's checks and messages. Strings, arrays and tensors are leaves.

>>> from dualgrad.graph import nest
>>> nest.flatten({"b": 1, "a": [2, (3, None)]})
[2, 3, None, 1]
>>> nest.map_structure(lambda x, y: x + y, {"b": 1, "a": [2, 3]}, {"a": [10, 20], "b": 5})
{'b': 6, 'a': [12, 23]}
"""
from __future__ import annotations

from collections.abc import Mapping

__all__ = ["is_nested", "is_sequence", "flatten", "pack_sequence_as", "map_structure",
           "assert_same_structure"]


def is_nested(seq):
    """A list, tuple (namedtuples too) or mapping: something nest looks inside."""
    return isinstance(seq, (list, tuple, Mapping))


is_sequence = is_nested   # TF1's name


def _children(seq):
    if isinstance(seq, Mapping):
        return [seq[k] for k in sorted(seq)]
    return list(seq)


def flatten(structure, expand_composites=False):
    """The leaves, depth first (a leaf alone gives [leaf])."""
    if not is_nested(structure):
        return [structure]
    return [leaf for child in _children(structure) for leaf in flatten(child)]


def _rebuild(like, items):
    if isinstance(like, Mapping):
        by_key = dict(zip(sorted(like), items))
        return type(like)((k, by_key[k]) for k in like)
    if isinstance(like, tuple) and hasattr(like, "_fields"):   # a namedtuple
        return type(like)(*items)
    return type(like)(items)


def _pack(structure, flat, at):
    if not is_nested(structure):
        return flat[at], at + 1
    items = []
    for child in _children(structure):
        item, at = _pack(child, flat, at)
        items.append(item)
    return _rebuild(structure, items), at


def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    """`flat_sequence` poured into `structure`'s shape."""
    flat_sequence = list(flat_sequence)
    n = len(flatten(structure))
    if n != len(flat_sequence):
        raise ValueError(f"Could not pack sequence. Structure had {n} atoms, but flat_sequence "
                         f"had {len(flat_sequence)} items.  Structure: {structure}, "
                         f"flat_sequence: {flat_sequence}.")
    return _pack(structure, flat_sequence, 0)[0]


def map_structure(func, *structure, check_types=True, expand_composites=False):
    """func applied leaf by leaf across structures of the same shape, in that shape."""
    if not structure:
        raise ValueError("Must provide at least one structure")
    for other in structure[1:]:
        assert_same_structure(structure[0], other, check_types=check_types)
    leaves = [flatten(s) for s in structure]
    return pack_sequence_as(structure[0], [func(*xs) for xs in zip(*leaves)])


def _show(x):
    return f"type={type(x).__name__} str={x}"


def _skeleton(x):
    if not is_nested(x):
        return "."
    if isinstance(x, Mapping):
        return "{" + ", ".join(f"{k!r}: {_skeleton(x[k])}" for k in x) + "}"
    inner = ", ".join(_skeleton(c) for c in x)
    if isinstance(x, tuple):
        if hasattr(x, "_fields"):
            return f"{type(x).__name__}(" + ", ".join(
                f"{f}={_skeleton(c)}" for f, c in zip(x._fields, x)) + ")"
        return f"({inner}{',' if len(x) == 1 else ''})"
    return f"[{inner}]"


def _difference(a, b, check_types):
    """(exception type, what differs) for the first place a and b part, or None."""
    if is_nested(a) != is_nested(b):
        seq, leaf = (a, b) if is_nested(a) else (b, a)
        return ValueError, (f'Substructure "{_show(seq)}" is a sequence, while substructure '
                            f'"{_show(leaf)}" is not')
    if not is_nested(a):
        return None
    if check_types and type(a) is not type(b):
        return TypeError, (f"The two namedtuples don't have the same sequence type. First "
                           f"structure {_show(a)} has type {type(a).__name__}, while second "
                           f"structure {_show(b)} has type {type(b).__name__}")
    if isinstance(a, Mapping) and isinstance(b, Mapping) and set(a) != set(b):
        return ValueError, (f"The two dictionaries don't have the same set of keys. First "
                            f"structure has keys {_show(list(a))}, while second structure has "
                            f"keys {_show(list(b))}")
    if len(a) != len(b):
        return ValueError, (f"The two structures don't have the same number of elements. "
                            f"First structure: {_show(a)}. Second structure: {_show(b)}")
    for x, y in zip(_children(a), _children(b)):
        found = _difference(x, y, check_types)
        if found:
            return found
    return None


def assert_same_structure(nest1, nest2, check_types=True, expand_composites=False):
    """Raise ValueError (TypeError for differing sequence types, with check_types) unless
    both structures nest the same way."""
    found = _difference(nest1, nest2, check_types)
    if found:
        cls, what = found
        raise cls(f"The two structures don't have the same nested structure.\n\n"
                  f"First structure: {_show(nest1)}\n\nSecond structure: {_show(nest2)}\n\n"
                  f"More specifically: {what}\nEntire first structure:\n{_skeleton(nest1)}\n"
                  f"Entire second structure:\n{_skeleton(nest2)}")

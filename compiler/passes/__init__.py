"""The optimiser's passes, run in this order by `compiler.optimize`.

Each pass is a module with `NAME` and `run(prog) -> dict` (what it did, for the report).
"""
from . import buffers, constant_fold, cse, fuse, layout, prune, simplify

PASSES = [prune, constant_fold, simplify, cse, layout, fuse, buffers]
BY_NAME = {p.NAME: p for p in PASSES}

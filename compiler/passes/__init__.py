"""The optimiser's passes, run in this order by `compiler.optimize`.

Each pass is a module with `NAME` and `run(prog) -> dict` (what it did, for the report).
"""
from . import buffers, cse, fold, fuse, prune, simplify

PASSES = [prune, fold, simplify, cse, fuse, buffers]
BY_NAME = {p.NAME: p for p in PASSES}

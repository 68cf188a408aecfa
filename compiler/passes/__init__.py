"""The optimiser's passes, run in this order by `compiler.optimize`.

Each pass is a module with `NAME` and `run(prog) -> dict` (what it did, for the report).
"""
from . import buffers, constant_fold, cse, fuse, layout, prune, remat, simplify

# NOTE: cse before simplify as well: rules that need a value read once (add_of_sums_to_like)
# see duplicates merged (an LSTM's bias_ih and bias_hh gradients are two equal chains)
# NOTE: remat runs only for a plan with a memory budget (optimize() leaves it out otherwise)
PASSES = [prune, constant_fold, cse, simplify, cse, layout, fuse, remat, buffers]
BY_NAME = {p.NAME: p for p in PASSES}

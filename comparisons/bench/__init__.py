"""`dualgrad bench`: step times of eager, graph, optimised graph and compiled eager, side by
side in one run, with jax.jit and PyTorch eager as outside references.

>>> from dualgrad.comparisons.bench import run_bench
>>> res = run_bench(["dispatch"], quick=True, columns=("eager",))
>>> res["workloads"][0]["columns"]["eager"]["status"]
'ok'
"""
from .run import run_bench, machine_description
from .workloads import COLUMNS, HEADERS, MICRO_NAMES, MODEL_NAMES

__all__ = ["run_bench", "machine_description", "COLUMNS", "HEADERS", "MODEL_NAMES",
           "MICRO_NAMES"]

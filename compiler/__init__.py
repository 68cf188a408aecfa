"""dualgrad's graph optimiser: what only a whole graph allows.

>>> import numpy as np
>>> from dualgrad import graph, compiler, ops
>>> g = graph.Graph()
>>> with g.as_default():
...     x = graph.placeholder(graph.float32, (None, 4))
...     y = graph.tanh(x * 2.0 + 1.0) * 1.0
>>> plan, report = compiler.optimize(g, [y], {x: ops.Spec((3, 4), np.dtype(np.float32))})
>>> [p.name for p in report.passes]
['prune', 'constant_fold', 'cse', 'simplify', 'cse', 'layout', 'fuse', 'buffers']
"""
if __name__ != "dualgrad.compiler":  # NOTE: a second copy would mean a second op registry
    raise ImportError(f"dualgrad's engines import under one root: write `from dualgrad import compiler`, "
                      f"not `import {__name__}` (found {__file__})")
from .fused_kernel import compile_fused
from .fused_spec import CodegenError, FusedSpec
from .export import ExportedProgram, ExportError, export, load_exported
from .memory import pin_malloc
from .optimize import optimize
from .passes import PASSES
from .report import PassRecord, Report
from .compiled import GraphBreak, compile  # noqa: A004 - torch.compile's name

__all__ = ["compile", "GraphBreak", "optimize", "Report", "PassRecord", "PASSES", "compile_fused",
           "FusedSpec", "CodegenError", "pin_malloc", "export", "load_exported",
           "ExportedProgram", "ExportError"]

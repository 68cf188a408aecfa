"""torch.fx.passes.shape_prop: run a GraphModule once on example inputs and record each
node's result's shape and dtype in `node.meta["tensor_meta"]`.

>>> from dualgrad import eager
>>> from dualgrad.eager import fx
>>> from dualgrad.eager.fx.passes.shape_prop import ShapeProp
>>> gm = fx.symbolic_trace(lambda x: eager.cat([x, x], dim=1).sum(dim=0))
>>> _ = ShapeProp(gm).propagate(eager.ones(2, 3))
>>> [tuple(n.meta["tensor_meta"].shape) for n in gm.graph.nodes if n.op != "output"]
[(2, 3), (2, 6), (6,)]

TensorMetadata holds shape, dtype and requires_grad; torch's stride, memory_format and
quantization fields are not there (dualgrad does not expose strides).
"""
from __future__ import annotations

from typing import Any, NamedTuple

from ...core import Tensor
from ..interpreter import Interpreter
from ..node import Node, map_aggregate


class TensorMetadata(NamedTuple):
    shape: tuple
    dtype: Any
    requires_grad: bool


def _extract_tensor_metadata(t: Tensor) -> TensorMetadata:
    return TensorMetadata(t.shape, t.dtype, t.requires_grad)


class ShapeProp(Interpreter):
    """`ShapeProp(gm).propagate(*args)` runs gm and sets, on every node whose result holds
    tensors, `meta["tensor_meta"]` (a TensorMetadata, or the same structure of them for a
    tuple or list) and `meta["type"]`."""

    def run_node(self, n: Node) -> Any:
        result = super().run_node(n)
        found = []

        def meta(x):
            if isinstance(x, Tensor):
                found.append(True)
                return _extract_tensor_metadata(x)
            return x
        tensor_meta = map_aggregate(result, meta)
        if found:
            n.meta["tensor_meta"] = tensor_meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args) -> Any:
        return super().run(*args)

"""ONNX in both directions: `export` a graph to an .onnx file, `load` one as a graph.

Needs the `onnx` extra (onnx, onnxruntime), imported only when these functions run:

    graph.onnx.export("model.onnx", inputs=[x], outputs=[logits], session=sess)
    og = graph.onnx.load("model.onnx")      # og.graph, og.inputs, og.outputs
    og.run({"x": batch})                    # a list of arrays

See docs/export.md.
"""
from .from_onnx import OnnxGraph, load
from .to_onnx import OnnxError, export, to_model

__all__ = ["export", "load", "OnnxError", "OnnxGraph", "to_model"]

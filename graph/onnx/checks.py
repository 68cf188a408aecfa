"""Checks on an untrusted ONNX graph before any reader rule runs: each a clear OnnxError."""
from __future__ import annotations


def check_structure(r, gp):
    """Every node input defined before use (no cycle), each name produced once, every graph
    output produced, only the default domain."""
    defined = {t.name for t in gp.initializer} | {vi.name for vi in gp.input}
    later = {}
    for node in gp.node:
        for o in node.output:
            if o:
                later.setdefault(o, node)
    for node in gp.node:
        if node.domain not in ("", "ai.onnx"):
            r.fail(node, f"operators of domain {node.domain!r} are not supported")
        for i in node.input:
            if not i or i in defined:
                continue
            if i in later:
                r.fail(node, f"input {i!r} is produced by node "
                             f"'{later[i].name or later[i].output[0]}', which does not come "
                             f"before it (a cycle, or nodes out of topological order)")
            r.fail(node, f"input {i!r} is not produced by any node, initializer or graph input")
        for o in node.output:
            if o and o in defined:
                r.fail(node, f"output {o!r} is already defined (each name is produced once)")
            defined.add(o)
    for vi in gp.output:
        if vi.name not in defined:
            r._refuse(None, f"graph output {vi.name!r} is not produced by any node, "
                            f"initializer or graph input")


def inferred_types(onnx, model):
    """{value name: (ONNX element type, shape with None for unknown dims)} from onnx's own
    type inference ({} if it fails)."""
    try:
        m = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:                            # noqa: BLE001 -- inference is a courtesy
        return {}
    out = {}
    for vi in list(m.graph.value_info) + list(m.graph.output):
        t = vi.type
        if t.HasField("tensor_type") and t.tensor_type.elem_type:
            tt = t.tensor_type
            shape = None if not tt.HasField("shape") else [
                d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
            out[vi.name] = (tt.elem_type, shape)
    return out

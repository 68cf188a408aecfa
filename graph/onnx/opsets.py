"""Which reader rule reads an ONNX node: one table, keyed by operator and `since_version`.

ONNX gives each operator versions; a model's opset picks, for each operator, the newest
version at or below it (`onnx.defs.get_schema(op, opset).since_version`). `TABLE[op]` maps
the versions whose meaning dualgrad reads to the rule for that meaning (`{1: softmax_2d,
13: softmax_axis}`): a version between two keys (a new dtype, no new meaning) is read by the
rule of the key below it. A version older than every key is refused, naming the versions
read.
"""
from __future__ import annotations

import numpy as np

from . import rules_attention as A
from . import rules_math as M
from . import rules_nn as N
from . import rules_resize as R
from . import rules_shape as S

TABLE = {**M.TABLE, **S.TABLE, **N.TABLE, **A.TABLE, **R.TABLE}


def schema_of(r, node):
    try:
        return r.onnx.defs.get_schema(node.op_type, r.opset, "")
    except Exception:                            # noqa: BLE001 -- SchemaError
        r.fail(node, f"ONNX has no operator {node.op_type} at opset {r.opset}")


def check_against_schema(r, node, schema):
    """Input and output counts, attribute names, types and presence, as the spec says."""
    A = r.onnx.AttributeProto.AttributeType
    n_in = len(node.input)
    if not schema.min_input <= n_in <= schema.max_input:
        r.fail(node, f"{n_in} inputs; version {schema.since_version} takes "
                     f"{schema.min_input} to {schema.max_input}")
    if not 1 <= len(node.output) <= schema.max_output:
        r.fail(node, f"{len(node.output)} outputs; version {schema.since_version} gives "
                     f"1 to {schema.max_output}")
    spec = schema.attributes
    for a in node.attribute:
        if a.name not in spec:
            r.fail(node, f"attribute {a.name!r} is not an attribute of version "
                         f"{schema.since_version} (it has {sorted(spec)})")
        want = int(spec[a.name].type.value)
        if a.type != want:
            r.fail(node, f"attribute {a.name!r} is {A.Name(a.type)} where ONNX wants "
                         f"{A.Name(want)}")
    given = {a.name for a in node.attribute}
    for name, at in spec.items():
        if at.required and name not in given:
            r.fail(node, f"required attribute {name!r} is missing")


def rule_for(r, node):
    """The rule reading `node` with the meaning of the model's opset, or an OnnxError."""
    versions = TABLE.get(node.op_type)
    if versions is None:
        r.fail(node, "this ONNX operator is not supported by dualgrad's importer")
    schema = schema_of(r, node)
    check_against_schema(r, node, schema)
    since = schema.since_version
    prim = M.primitive_for(node.op_type) if node.op_type in M.UNARY else None
    if prim is not None:
        # NOTE: a registry entry that names this operator (onnx=) is its reading: an op added
        # to ops/ is read from ONNX with no change here (docs/architecture.md)
        return M.direct(prim)
    keys = [k for k in versions if k <= since]
    if not keys:
        r.fail(node, f"version {since} of {node.op_type} is not supported; dualgrad reads "
                     f"its versions {sorted(versions)} and later")
    return versions[max(keys)]


def outputs_of(r, node, outs):
    """The rule's outputs, checked against the node's outputs and ONNX's type inference."""
    from ..core import Tensor
    outs = [o if o is None or isinstance(o, Tensor) else np.asarray(o) for o in outs]
    for k, name in enumerate(node.output):
        if not name:
            continue
        if k >= len(outs) or outs[k] is None:
            r.fail(node, f"output {k} ({name!r}) is not supported")
        want = r.inferred.get(name, (None, None))[0]
        got = outs[k].dtype if not (isinstance(outs[k], np.ndarray) and outs[k].dtype == object) \
            else np.dtype(np.int64)
        if want is not None:
            dt = r.dtype(want, node, f"output {name!r}")
            if np.dtype(got) != dt:
                r.fail(node, f"dualgrad's rule gives output {name!r} dtype {np.dtype(got).name} "
                             f"where ONNX's type inference says {dt.name}")
    return outs

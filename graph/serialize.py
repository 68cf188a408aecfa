"""Save and load graphs: structure as JSON, arrays (constants, variable values) as safetensors.

Never pickle. `save("model", sess)` writes `model.json` and `model.safetensors`;
`load("model")` rebuilds the graph, re-running every op's shape rule against the stored
shapes, and a Session on it starts with the saved variable values. A file that is not
JSON (e.g. a pickle), names an op this library does not have, or is malformed, raises
`graph.errors.GraphFileError` saying what is wrong.

Attributes are encoded explicitly: tuples {"__tuple__": [...]}, slices {"__slice__":
[start, stop, step]}, Ellipsis {"__ellipsis__": true}, non-finite floats {"__float__":
"inf"}, dtypes {"__dtype__": "float32"}, arrays {"__array__": key in the safetensors
file}, cond/while bodies {"__function__": {...}}.

>>> import numpy as np, tempfile, os
>>> from dualgrad import graph
>>> g = graph.Graph()
>>> with g.as_default():
...     x = graph.placeholder(graph.float32, (None, 2), name="x")
...     y = graph.reduce_sum(x * 2.0, axis=1, name="y")
>>> path = os.path.join(tempfile.mkdtemp(), "m")
>>> _ = graph.save(path, graph=g)
>>> g2 = graph.load(path)
>>> with graph.Session(g2) as s:
...     s.run("y:0", {"x:0": [[1.0, 2.0]]})
array([6.], dtype=float32)
"""
from __future__ import annotations

import base64
import json
import math
import os

import numpy as np

from dualgrad.ops.core import quiet_broadcast
from dualgrad.ops.core import ShapeError, Spec
from dualgrad.ops.files import atomic_paths, read_safetensors, write_safetensors

from .core import NON_GLOBAL, Graph, GraphKeys, GRAPH_OPS, get_default_graph, op_by_name
from .errors import GraphFileError, NotFoundError

__all__ = ["save", "load", "restore"]

FORMAT, VERSION = "dualgrad.graph", 1
MAX_DEPTH = 32   # how deep an attribute may nest (dualgrad itself writes 3-4 levels at most)


def _paths(path):
    path = os.fspath(path)
    for ext in (".json", ".safetensors"):
        if path.endswith(ext):
            path = path[: -len(ext)]
    return path + ".json", path + ".safetensors"


# -- encoding --------------------------------------------------------------------------------------
class _Encoder:
    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}
        self.bodies: dict[str, dict] = {}
        self.body_keys: dict[int, str] = {}

    def graph(self, g, key):
        local = {id(v) for v in g.collections.get(NON_GLOBAL, ())}
        doc = {"nodes": [self.node(n, key) for n in g._nodes],
               "variables": [{"name": v.node.name, "initializer": v.initializer.name,
                              "initial_value": v.initial_value.name,
                              **({"local": True} if id(v) in local else {})}
                             for v in g.variables]}
        if g.outer is not None:
            doc["label"] = g.label
            doc["outer"] = self.body_keys.get(id(g.outer), "")
            doc["captures"] = [[s.name, i.name] for s, i in g.captures]
            if hasattr(g, "var_inputs"):
                doc["var_inputs"] = [t.name for t in g.var_inputs]
        return doc

    def node(self, n, gkey):
        return {"name": n.name, "op": n.type, "inputs": [t.name for t in n.inputs],
                "control": [c.name for c in n.control_inputs],
                "attrs": {k: self.value(v, f"{gkey}{n.name}/{k}") for k, v in n.attrs.items()},
                "outputs": [{"shape": list(t.spec.shape), "dtype": t.spec.dtype.name,
                             "weak": self.value(t.spec.weak, "")} for t in n.outputs],
                "loc": list(n.loc) if n.loc else None,
                "grad_of": n.grad_of.name if n.grad_of is not None else None}

    def value(self, v, key):
        from .control_flow import Function
        if v is None or isinstance(v, (bool, int, str)) and not isinstance(v, np.generic):
            return v
        if isinstance(v, float):
            return v if math.isfinite(v) else {"__float__": repr(v)}
        if isinstance(v, np.generic):
            return self.value(v.item(), key)
        if isinstance(v, tuple):
            return {"__tuple__": [self.value(x, f"{key}/{i}") for i, x in enumerate(v)]}
        if isinstance(v, list):
            return [self.value(x, f"{key}/{i}") for i, x in enumerate(v)]
        if isinstance(v, slice):
            return {"__slice__": [self.value(v.start, ""), self.value(v.stop, ""),
                                  self.value(v.step, "")]}
        if v is Ellipsis:
            return {"__ellipsis__": True}
        if isinstance(v, np.dtype):
            return {"__dtype__": v.name}
        if isinstance(v, np.ndarray) and v.dtype == object:
            # NOTE: TF's string tensors (bytes or str items): JSON, safetensors has no strings
            items = v.reshape(-1).tolist()
            if not all(isinstance(x, (bytes, str)) for x in items):
                raise TypeError(f"save: cannot encode an object array of {type(items[0])}")
            return {"__strings__": {"shape": list(v.shape), "items": [
                "b:" + base64.b64encode(x).decode("ascii") if isinstance(x, bytes) else "s:" + x
                for x in items]}}
        if isinstance(v, np.ndarray):
            self.arrays[key] = np.asarray(v, order="C")   # NOTE: ascontiguousarray makes 0-d 1-d
            return {"__array__": key}
        if isinstance(v, Function):
            return {"__function__": {"body": self.body(v.body),
                                     "inputs": [t.name for t in v.inputs],
                                     "outputs": [t.name for t in v.outputs]}}
        if getattr(v, "runtime_object", False):   # NOTE: a queue, reader, iterator: see below
            return {"__runtime__": repr(v)}
        raise TypeError(f"save: cannot encode attribute value {v!r} of type {type(v).__name__}")

    def body(self, b):
        key = self.body_keys.get(id(b))
        if key is None:
            key = self.body_keys[id(b)] = f"body{len(self.body_keys)}"
            self.bodies[key] = self.graph(b, key + "/")
        return key


def save(path, session=None, graph=None, var_list=None, *, extra=None, values_only_if=False):
    """Write the graph (default: the session's, else the default graph) and, given a
    session, its variable values (only those of var_list, when given). Returns the path of
    the JSON file. `extra`: more top-level JSON fields, written in the same atomic save
    (compiler.export's program signature). values_only_if=True (train.Saver's checkpoints):
    a graph holding what cannot be written (a tf.data iterator) is left out, the file says
    why, and the values are written; `load` of such a file raises GraphFileError."""
    g = graph if graph is not None else session.graph if session is not None else \
        get_default_graph()
    enc = _Encoder()
    try:
        doc = {"format": FORMAT, "version": VERSION, "graph": enc.graph(g, "")}
        doc["bodies"] = enc.bodies
    except TypeError as e:
        if not values_only_if:
            raise
        enc = _Encoder()
        doc = {"format": FORMAT, "version": VERSION, "values_only": str(e)}
    doc.update(extra or {})
    if session is not None:
        state = session.variable_values()
        for v in g.variables if var_list is None else var_list:
            if v.node.name in state:
                enc.arrays[f"var:{v.node.name}"] = np.asarray(state[v.node.name], order="C")
    jpath, spath = _paths(path)
    with atomic_paths(spath, jpath) as (stmp, jtmp):   # NOTE: a killed save loses nothing
        write_safetensors(stmp, enc.arrays, metadata={"format": FORMAT})
        with open(jtmp, "w") as f:
            json.dump(doc, f, indent=1)
    return jpath


# -- decoding --------------------------------------------------------------------------------------
class _Decoder:
    def __init__(self, doc, arrays):
        self.doc, self.arrays = doc, arrays
        self.bodies: dict[str, Graph] = {}

    def graph(self, gdoc, g):
        for ndoc in _get(gdoc, "nodes", list):
            self.node(ndoc, g)
        for vdoc in _get(gdoc, "variables", list):
            v = _tensor(g, _get(vdoc, "name", str) + ":0")
            v.initializer = g.get_operation_by_name(_get(vdoc, "initializer", str))
            v.initial_value = _tensor(g, _get(vdoc, "initial_value", str))
            g.variables.append(v)
            if vdoc.get("local") is True:    # NOTE: a metric's count, as LOCAL_VARIABLES
                g.add_to_collection(NON_GLOBAL, v)
                g.add_to_collection(GraphKeys.LOCAL_VARIABLES, v)
        return g

    def node(self, nd, g):
        from .variables import Variable
        name, opname = _get(nd, "name", str), _get(nd, "op", str)
        op = op_by_name(opname)
        if op is None:
            raise GraphFileError(f"node {name!r} uses op {opname!r}, which this version of "
                                 f"dualgrad does not have")
        inputs = [_tensor(g, t) for t in _get(nd, "inputs", list)]
        control = [g.get_operation_by_name(c) for c in _get(nd, "control", list)]
        attrs = {k: self.value(v) for k, v in _get(nd, "attrs", dict).items()}
        specs = [Spec(tuple(_get(o, "shape", list)), np.dtype(_get(o, "dtype", str)),
                      self.value(o.get("weak"))) for o in _get(nd, "outputs", list)]
        if opname not in GRAPH_OPS:
            _check_rule(op, name, inputs, attrs, specs)
        elif opname == "const":
            v = attrs.get("value")
            if not isinstance(v, np.ndarray) or len(specs) != 1 or v.shape != specs[0].shape \
                    or v.dtype != specs[0].dtype:
                raise GraphFileError(f"constant {name!r}: stored value does not match its "
                                     f"declared shape and dtype")
            v.flags.writeable = False
        loc = nd.get("loc")
        node = g.create_node(op, inputs, attrs, specs, name, exact_name=True,
                             loc=tuple(loc) if loc else ("<loaded>", 0),
                             grad_of=_find_node(g, nd.get("grad_of")), control_inputs=control)
        if opname == "variable":
            v = Variable.__new__(Variable)
            v.node, v.index, v.spec = node, 0, specs[0]
            v.trainable = bool(attrs.get("trainable", True))
            node.outputs = (v,)

    def value(self, v, depth=0):
        from .control_flow import Function
        if not isinstance(v, (dict, list)):
            return v
        if depth >= MAX_DEPTH:
            raise GraphFileError(f"an attribute is nested more than {MAX_DEPTH} levels deep")
        if isinstance(v, list):
            return [self.value(x, depth + 1) for x in v]
        if len(v) != 1:
            raise GraphFileError(f"unknown encoded value {str(v)[:200]}")
        tag, x = next(iter(v.items()))
        if tag == "__tuple__":
            return tuple(self.value(i, depth + 1) for i in x)
        if tag == "__slice__":
            return slice(*x)
        if tag == "__ellipsis__":
            return Ellipsis
        if tag == "__float__":
            return float(x)
        if tag == "__runtime__":
            raise GraphFileError(
                f"the graph holds {str(x)[:200]}, an object that lives only in the program "
                f"that built it (a queue, reader or iterator): graph.load cannot rebuild it. "
                f"Build the graph with its code and restore the values (Saver.restore / "
                f"graph.restore)")
        if tag == "__dtype__":
            return np.dtype(x)
        if tag == "__array__":
            if x not in self.arrays:
                raise GraphFileError(f"array {x!r} is missing from the weights file")
            return self.arrays[x]
        if tag == "__strings__":
            items = [base64.b64decode(i[2:]) if i.startswith("b:") else i[2:]
                     for i in _get(x, "items", list) if isinstance(i, str)]
            out = np.empty(len(items), object)
            out[:] = items
            return out.reshape(tuple(_get(x, "shape", list)))
        if tag == "__function__":
            body = self.body(_get(x, "body", str))
            return Function(body, [_tensor(body, t) for t in x["inputs"]],
                            [_tensor(body, t) for t in x["outputs"]])
        raise GraphFileError(f"unknown encoded value tag {tag!r}")

    def body(self, key):
        from .control_flow import Body
        b = self.bodies.get(key)
        if b is not None:
            return b
        bdoc = _get(_get(self.doc, "bodies", dict), key, dict)
        outer_key = bdoc.get("outer", "")
        outer = self.bodies[outer_key] if outer_key else self.top
        b = self.bodies[key] = Body(outer, _get(bdoc, "label", str))
        self.graph(bdoc, b)
        for src, inner in _get(bdoc, "captures", list):
            s, i = _tensor(outer, src), _tensor(b, inner)
            b.captures.append((s, i))
            b._cmap[id(s)] = i
        if "var_inputs" in bdoc:
            b.var_inputs = [_tensor(b, t) for t in bdoc["var_inputs"]]
        return b


def _get(d, key, typ):
    if not isinstance(d, dict) or key not in d:
        raise GraphFileError(f"missing field {key!r}")
    v = d[key]
    if not isinstance(v, typ):
        raise GraphFileError(f"field {key!r} should be a {typ.__name__}, got {v!r}")
    return v


def _tensor(g, name):
    if not isinstance(name, str) or ":" not in name:
        raise GraphFileError(f"bad tensor reference {name!r}")
    node_name, _, i = name.rpartition(":")
    node = g._by_name.get(node_name)
    if node is None or not i.isdigit() or int(i) >= len(node.outputs):
        raise GraphFileError(f"reference to tensor {name!r}, which is not defined before use")
    return node.outputs[int(i)]


def _find_node(g, name):
    while name is not None and g is not None:
        if name in g._by_name:
            return g._by_name[name]
        g = g.outer
    return None


def _check_rule(op, name, inputs, attrs, specs):
    try:
        with quiet_broadcast():   # NOTE: warned when the graph was built
            spec = op.infer(*[t.spec for t in inputs], **attrs)
    except (ShapeError, TypeError, ValueError) as e:
        raise GraphFileError(f"node {name!r} ({op.name}) fails its shape rule: {e}") from None
    if len(specs) != 1 or spec.shape != specs[0].shape or spec.dtype != specs[0].dtype:
        raise GraphFileError(f"node {name!r} ({op.name}): stored output "
                             f"{[(s.shape, str(s.dtype)) for s in specs]} does not match the "
                             f"shape rule's {spec.shape} {spec.dtype.name}")


def _read(path):
    jpath, spath = _paths(path)
    try:
        with open(jpath, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise GraphFileError(f"cannot read graph file {jpath}: {e}") from None
    if raw[:1] == b"\x80":
        raise GraphFileError(f"{jpath} looks like a pickle file; dualgrad never unpickles "
                             f"(it is unsafe): save graphs with graph.save()")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise GraphFileError(f"{jpath} is not a dualgrad graph file (not JSON: {e})") from None
    except RecursionError:
        raise GraphFileError(f"{jpath} is not a dualgrad graph file (its JSON is nested too "
                             f"deeply to read)") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise GraphFileError(f"{jpath} is not a dualgrad graph file (format field is "
                             f"{doc.get('format') if isinstance(doc, dict) else None!r})")
    if doc.get("version") != VERSION:
        raise GraphFileError(f"{jpath} has format version {doc.get('version')!r}; this "
                             f"dualgrad reads version {VERSION}")
    try:
        arrays = read_safetensors(spath)[0] if os.path.exists(spath) else {}
    except Exception as e:  # noqa: BLE001 - safetensors raises its own error types
        raise GraphFileError(f"cannot read weights file {spath}: {e}") from None
    return doc, arrays


def load(path) -> Graph:
    """Rebuild a saved graph; Sessions on it start with the saved variable values."""
    return load_into(path, Graph())


def load_into(path, g) -> Graph:
    """Rebuild a saved graph's nodes in graph `g` (train.import_meta_graph: the default
    graph); a node whose name `g` already has is a GraphFileError."""
    doc, arrays = _read(path)
    if "values_only" in doc:
        raise GraphFileError(f"{_paths(path)[0]} holds variable values only (a checkpoint "
                             f"whose graph could not be written: {doc['values_only']}); "
                             f"rebuild the graph with its code and restore the values")
    dec = _Decoder(doc, arrays)
    dec.top = g
    try:
        dec.graph(_get(doc, "graph", dict), g)
    except GraphFileError as e:
        raise GraphFileError(f"{_paths(path)[0]}: {e}") from None
    except (LookupError, TypeError, ValueError, AttributeError, ArithmeticError) as e:
        raise GraphFileError(f"{_paths(path)[0]} is malformed: {type(e).__name__}: {e}") \
            from None
    except RecursionError:   # NOTE: e.g. control-flow bodies nested hundreds deep
        raise GraphFileError(f"{_paths(path)[0]} is malformed: nested too deeply to "
                             f"load") from None
    g.saved_values.update((k[4:], v) for k, v in arrays.items() if k.startswith("var:"))
    g.saved_extra = {k: v for k, v in doc.items()      # save(extra=...): load_exported's
                     if k not in ("format", "version", "graph", "bodies")}
    for v in g.variables:      # NOTE: as restore(): a wrong shape would be broadcast later
        a = g.saved_values.get(v.node.name)
        if a is not None and (a.shape != tuple(v.shape) or a.dtype != v.dtype):
            raise GraphFileError(f"{_paths(path)[1]}: variable {v.node.name!r} is {v.shape} "
                                 f"{v.dtype.name} in the graph but {a.shape} {a.dtype.name} in the "
                                 f"weights file")
    return g


def restore(session, path, var_list=None):
    """Load saved variable values into `session` (variables matched by name): those of
    var_list, default every variable of the session's graph."""
    _, arrays = _read(path)
    values = {}
    for v in session.graph.variables if var_list is None else var_list:
        key = f"var:{v.node.name}"
        if key not in arrays:
            raise NotFoundError(f"restore: variable {v.node.name!r} is not in {path}")
        a = arrays[key]
        if a.shape != tuple(v.shape) or a.dtype != v.dtype:
            raise GraphFileError(f"restore: variable {v.node.name!r} is {v.shape} {v.dtype.name} "
                                 f"in the graph but {a.shape} {a.dtype.name} in {path}")
        values[v.node.name] = a
    session.load_variable_values(values)


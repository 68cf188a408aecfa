"""TF1's `tf.train.import_meta_graph(path + '.meta')`, then `saver.restore(sess, path)`.

dualgrad's `Saver.save(sess, path)` writes the graph beside the values (`path.json`,
`path.safetensors`) and no `.meta` file: `import_meta_graph("path.meta")` reads `path.json`
into the default graph (a node name already there is an error) and returns a `Saver`, whose
`restore(sess, path)` loads the values, as in TF. A `.meta` file TF wrote (a MetaGraphDef
protobuf) is read for its `graph_def`, imported with `import_graph_def`; its variables
cannot be restored, since TF's checkpoints are not read (the import says so at the first
variable node: freeze the model in TF and import the `.pb` instead).

>>> import numpy as np, os, tempfile
>>> from dualgrad import graph as tf
>>> path = os.path.join(tempfile.mkdtemp(), "model")
>>> with tf.Graph().as_default():
...     w = tf.Variable(np.arange(3, dtype=np.float32), name="w")
...     y = tf.reduce_sum(w * 2.0, name="y")
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         _ = tf.train.Saver().save(sess, path)
>>> with tf.Graph().as_default() as g:
...     saver = tf.train.import_meta_graph(path + ".meta")
...     with tf.Session() as sess:
...         saver.restore(sess, path)
...         float(sess.run(g.get_tensor_by_name("y:0")))
6.0
"""
from __future__ import annotations

import os

from .core import get_default_graph
from .errors import GraphFileError
from .graph_def import DecodeError, MetaGraphDef
from .graph_def_import import import_graph_def
from .saver import Saver
from .serialize import load_into

__all__ = ["import_meta_graph"]


def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None, **kwargs):
    """Import a saved graph into the default graph and return a Saver for its variables
    (see the module docstring); None when the graph has no variables, as TF."""
    if kwargs:
        raise TypeError(f"import_meta_graph: unsupported arguments {sorted(kwargs)}")
    g = get_default_graph()
    if isinstance(meta_graph_or_file, MetaGraphDef):
        return _import_tf(meta_graph_or_file, import_scope, "the MetaGraphDef")
    path = os.fspath(meta_graph_or_file)
    prefix = path[:-len(".meta")] if path.endswith(".meta") else path
    if not os.path.exists(path) and os.path.exists(prefix + ".json"):
        if import_scope:
            raise NotImplementedError("import_meta_graph(import_scope=...) of a dualgrad "
                                      "checkpoint is not supported")
        before = len(g.variables)
        try:
            load_into(prefix, g)
        except ValueError as e:
            raise GraphFileError(f"import_meta_graph: {e}") from None
        return Saver() if len(g.variables) > before else None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise GraphFileError(f"import_meta_graph: cannot read {path} (and there is no "
                             f"dualgrad checkpoint graph {prefix}.json): {e}") from None
    try:
        meta = MetaGraphDef.FromString(data)
    except DecodeError as e:
        raise GraphFileError(f"import_meta_graph: {path} is not a MetaGraphDef: {e}") from None
    return _import_tf(meta, import_scope, path)


def _import_tf(meta, import_scope, where):
    if not meta.graph_def.node:
        raise GraphFileError(f"import_meta_graph: {where} holds no graph")
    try:
        import_graph_def(meta.graph_def, name=import_scope or "")
    except ValueError as e:
        raise GraphFileError(f"import_meta_graph: {where}: {e}") from None
    return None

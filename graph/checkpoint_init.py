"""tf.train.init_from_checkpoint: variables whose initializers read a saved checkpoint.

`init_from_checkpoint(ckpt_dir_or_file, assignment_map)` replaces the initializer of each
variable the map names with an assign of the checkpoint's tensor, read from the file when
the initializer runs (global_variables_initializer()), as TF1's does. The map (a dict or a
list of pairs) takes TF1's forms: `"ckpt_scope/": "scope/"` (every variable get_variable
made under scope/, from ckpt_scope/ with the same relative names; `"/"` is the root on
either side), `"ckpt/name": "scope/var"` (one variable by its get_variable name) and
`"ckpt/name": variable` (a Variable object). A name missing from the checkpoint or a shape
that differs raises ValueError at the call, as in TF1. Checkpoints are dualgrad's own
(train.Saver's prefix.json + prefix.safetensors; a directory means its latest one).

>>> import numpy as np, os, tempfile
>>> from dualgrad import graph as tf
>>> d = tempfile.mkdtemp()
>>> with tf.Graph().as_default():
...     with tf.variable_scope("old"):
...         _ = tf.get_variable("w", initializer=np.full(2, 7.0, np.float32))
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         _ = tf.train.Saver().save(sess, os.path.join(d, "model"))
>>> with tf.Graph().as_default():
...     with tf.variable_scope("new"):
...         w = tf.get_variable("w", shape=[2], initializer=tf.zeros_initializer())
...     tf.train.init_from_checkpoint(d, {"old/": "new/"})
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         sess.run(w).tolist()
[7.0, 7.0]
"""
from __future__ import annotations

import os

import numpy as np

from dualgrad.ops.core import Spec

from .core import get_default_graph, graph_op
from .dtypes import as_dtype
from .errors import NotFoundError
from .saver import latest_checkpoint
from .serialize import _paths, _read
from .variable_scope import _store
from .variables import Variable, assign

__all__ = ["init_from_checkpoint", "list_variables", "load_variable"]


def _read_kernel(node):
    prefix, name = node.attrs["prefix"], node.attrs["tensor"]

    def run(state):   # NOTE: stateful: read at every run, never folded into a constant
        return np.array(_read(prefix)[1][f"var:{name}"])
    return run, True


CHECKPOINT_READ = graph_op("checkpoint_initializer", _read_kernel)


def _prefix(ckpt_dir_or_file):
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        found = latest_checkpoint(path)
        if found is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given "
                             f"directory {path}")
        return found
    return path


def _stored(prefix):
    """{variable name: array} of the checkpoint (its values, read now to check the map)."""
    if not os.path.exists(_paths(prefix)[1]):
        raise ValueError(f"init_from_checkpoint: no checkpoint at {prefix} (expected "
                         f"{_paths(prefix)[1]}, as train.Saver writes)")
    return {k[4:]: v for k, v in _read(prefix)[1].items() if k.startswith("var:")}


def _set_initializer(var, prefix, name, stored):
    """var's initializer becomes an assign of the checkpoint's tensor `name`, read when it
    runs."""
    if tuple(stored[name].shape) != tuple(var.shape):
        raise ValueError(f"Shape of variable {var.node.name} ({list(var.shape)}) doesn't match "
                         f"with shape of tensor {name} ({list(stored[name].shape)}) from "
                         f"checkpoint reader.")
    g = var.graph if hasattr(var, "graph") else get_default_graph()
    node = g.create_node(CHECKPOINT_READ, (), {"prefix": prefix, "tensor": name},
                         [Spec(tuple(var.shape), stored[name].dtype)],
                         f"{var.node.name}/checkpoint_initializer")
    var.initial_value = node.outputs[0]
    var.initializer = assign(var, node.outputs[0], name="Assign").node


def _by_scope(ckpt_scope, current, store_vars, stored, prefix, ckpt_path):
    if not ckpt_scope.endswith("/"):
        raise ValueError(f"Assignment map with scope only name {current} should map to scope "
                         f"only {ckpt_scope}. Should be 'scope/': 'other_scope/'.")
    scope = current[:current.rindex("/")] if "/" in current else ""
    for var_name in sorted(n for n in store_vars if not scope or n.startswith(scope + "/")):
        full = var_name[len(scope):]
        if current != "/":
            full = full[1:]
        if ckpt_scope != "/":
            full = ckpt_scope + full
        full = full.rstrip("/")
        if full not in stored:
            raise ValueError(f"Tensor {full} ({var_name[len(scope) + 1:]} in {ckpt_scope}) is "
                             f"not found in {ckpt_path} checkpoint")
        _set_initializer(store_vars[var_name], prefix, full, stored)


def init_from_checkpoint(ckpt_dir_or_file, assignment_map):
    """Initialize the variables the map names from the checkpoint (see the module's text)."""
    prefix = _prefix(ckpt_dir_or_file)
    stored = _stored(prefix)
    store_vars = _store(get_default_graph()).vars
    pairs = assignment_map.items() if isinstance(assignment_map, dict) else assignment_map
    for ckpt_name, current in sorted(pairs, key=lambda kv: kv[0]):
        if isinstance(current, (list, tuple)):
            raise NotImplementedError("init_from_checkpoint: a list of partitioned variables "
                                      "is not supported by dualgrad (it has no partitioned "
                                      "variables)")
        var = current if isinstance(current, Variable) else store_vars.get(current)
        if var is None:
            _by_scope(ckpt_name, current, store_vars, stored, prefix, ckpt_dir_or_file)
            continue
        if ckpt_name not in stored:
            raise ValueError(f"Tensor {ckpt_name} is not found in {ckpt_dir_or_file} "
                             f"checkpoint {sorted(stored)}")
        _set_initializer(var, prefix, ckpt_name, stored)


def list_variables(ckpt_dir_or_file):
    """[(name, shape)] of the variables saved in a checkpoint (a directory means its latest
    one), sorted by name, as tf.train.list_variables."""
    stored = _stored(_prefix(ckpt_dir_or_file))
    return [(k, list(stored[k].shape)) for k in sorted(stored)]


def load_variable(ckpt_dir_or_file, name):
    """The saved value of variable `name` (a NumPy array), as tf.train.load_variable; a
    name the checkpoint lacks raises NotFoundError."""
    stored = _stored(_prefix(ckpt_dir_or_file))
    name = name[:-2] if name.endswith(":0") else name
    if name not in stored:
        raise NotFoundError(f"Key {name} not found in checkpoint {ckpt_dir_or_file} (it holds "
                            f"{sorted(stored)})")
    return np.array(stored[name])


class CheckpointReader:
    """What tf.train.NewCheckpointReader returns: the variables of one checkpoint."""

    def __init__(self, ckpt_dir_or_file):
        self._path = _prefix(ckpt_dir_or_file)
        self._stored = _stored(self._path)

    def get_variable_to_shape_map(self):
        return {k: list(v.shape) for k, v in self._stored.items()}

    def get_variable_to_dtype_map(self):
        return {k: as_dtype(v.dtype) for k, v in self._stored.items()}

    def has_tensor(self, name):
        return name in self._stored

    def get_tensor(self, name):
        return load_variable(self._path, name)


def NewCheckpointReader(filepattern):  # noqa: N802 - TF's name
    """A reader of the checkpoint at `filepattern` (a Saver prefix or its directory)."""
    return CheckpointReader(filepattern)


def load_checkpoint(ckpt_dir_or_file):
    """tf.train.load_checkpoint / contrib.framework.load_checkpoint: a CheckpointReader."""
    return CheckpointReader(ckpt_dir_or_file)

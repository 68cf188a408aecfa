"""TF1's `train.Saver` and checkpoint bookkeeping, over graph.save / restore's files.

A checkpoint `prefix` is the pair `prefix.json` (the graph) + `prefix.safetensors` (the
variable values), written atomically. `save(sess, "dir/model", global_step=N)` writes the
checkpoint `dir/model-N`, keeps the newest `max_to_keep` of this Saver's checkpoints (older
ones are deleted) and records them in the state file `dir/checkpoint`, in TF1's text
format, which `latest_checkpoint(dir)` and `get_checkpoint_state(dir)` read.

>>> import numpy as np, tempfile, os
>>> from dualgrad import graph as tf
>>> w = tf.Variable(np.ones(2, np.float32), name="w")
>>> saver, d = tf.train.Saver(max_to_keep=2), tempfile.mkdtemp()
>>> with tf.Session() as sess:
...     sess.run(tf.global_variables_initializer())
...     for step in range(3):
...         _ = saver.save(sess, os.path.join(d, "model"), global_step=step)
>>> [os.path.basename(p) for p in saver.last_checkpoints]
['model-1', 'model-2']
>>> os.path.basename(tf.train.latest_checkpoint(d))
'model-2'
"""
from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import time

from dualgrad.ops.files import atomic_path

from .core import Tensor
from .errors import FailedPreconditionError
from .serialize import _paths, restore as _restore, save as _save

__all__ = ["Saver", "latest_checkpoint", "get_checkpoint_state", "checkpoint_exists",
           "CheckpointState"]

CheckpointState = collections.namedtuple(
    "CheckpointState", ("model_checkpoint_path", "all_model_checkpoint_paths"))


class Saver:
    """`Saver(var_list=None, max_to_keep=5, keep_checkpoint_every_n_hours=10000.0, ...)`.

    var_list: the Variables to save and restore (default: the session graph's global
    variables, at save time; metrics' local variables are not saved, as in TF1). A dict
    var_list (checkpoint names mapped to variables) raises NotImplementedError.
    max_to_keep None or 0 keeps every checkpoint file (the state file then lists the last).
    """

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False,
                 saver_def=None, builder=None, defer_build=False, allow_empty=False,
                 write_version=None, pad_step_number=False, save_relative_paths=False,
                 filename=None):
        if isinstance(var_list, dict):
            raise NotImplementedError("Saver(var_list=dict): renaming variables in a "
                                      "checkpoint is not supported; pass a list")
        for arg, what in ((reshape, "reshape"), (sharded, "sharded"),
                          (saver_def, "saver_def"), (builder, "builder")):
            if arg:
                raise NotImplementedError(f"Saver({what}=...) is not supported")
        self._var_list = None if var_list is None else list(var_list)
        if self._var_list is not None and not self._var_list and not allow_empty:
            raise ValueError("No variables to save")
        self._max_to_keep = max_to_keep
        self._keep_every = float(keep_checkpoint_every_n_hours) * 3600.0
        self._next_keep_time = time.time() + self._keep_every
        self._allow_empty = allow_empty
        self._pad, self._relative = pad_step_number, save_relative_paths
        self._last: list[tuple[str, float]] = []

    @property
    def last_checkpoints(self):
        """This Saver's checkpoints not yet deleted, oldest first."""
        return [p for p, _ in self._last]

    def _variables(self, sess):
        vs = self._var_list if self._var_list is not None else _global_variables(sess.graph)
        if not vs and not self._allow_empty:
            raise ValueError("No variables to save")
        return vs

    def save(self, sess, save_path, global_step=None, latest_filename=None,
             meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
             strip_default_attrs=False, save_debug_info=False):
        """Write checkpoint `save_path` (`save_path-N` with global_step N, an int or a
        tensor / variable read in `sess`); returns that prefix. The graph is written (the
        JSON file) whatever write_meta_graph says (a queue or iterator in it is marked, and
        graph.load of the file says it cannot be rebuilt); should the graph hold anything
        else that cannot be written, the file holds the values only, which restore reads."""
        prefix = os.fspath(save_path)
        if global_step is not None:
            step = int(sess.run(global_step)) if isinstance(global_step, Tensor) \
                else int(global_step)
            prefix = f"{prefix}-{step:08d}" if self._pad else f"{prefix}-{step}"
        vs = self._variables(sess)
        missing = [v.node.name for v in vs if v.node.name not in sess.variable_values()]
        if missing:
            raise FailedPreconditionError(
                f"Saver.save: attempting to use uninitialized value {missing[0]!r}; run "
                f"graph.global_variables_initializer() in this session first")
        _save(prefix, sess, var_list=vs, values_only_if=True)
        if write_state:
            self._record(prefix)
            self._delete_old()
            _write_state(os.path.dirname(prefix), latest_filename, prefix,
                         self.last_checkpoints if self._max_to_keep else [prefix],
                         self._relative)
        return prefix

    def restore(self, sess, save_path):
        """Load the saved values of var_list (default: the global variables) into sess."""
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        _restore(sess, save_path, var_list=self._variables(sess))

    def _record(self, prefix):
        self._last = [(p, t) for p, t in self._last if p != prefix]
        self._last.append((prefix, time.time()))

    def _delete_old(self):
        if not self._max_to_keep:
            return
        while len(self._last) > self._max_to_keep:
            prefix, stamp = self._last.pop(0)
            if stamp > self._next_keep_time:   # NOTE: TF1's keep_checkpoint_every_n_hours
                self._next_keep_time += self._keep_every
                continue
            for path in _paths(prefix):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)


def _global_variables(g):
    from .variables import global_variables
    return global_variables(g)


# -- the state file ------------------------------------------------------------------------------
def _state_path(directory, latest_filename):
    return os.path.join(directory or ".", latest_filename or "checkpoint")


def _stored(prefix, directory, relative):
    """As TF1 writes a path: relative to the directory unless it was given absolute."""
    if os.path.isabs(prefix) and not relative:
        return prefix
    return os.path.relpath(os.path.abspath(prefix), os.path.abspath(directory or "."))


def _write_state(directory, latest_filename, prefix, all_prefixes, relative):
    lines = [f"model_checkpoint_path: {json.dumps(_stored(prefix, directory, relative))}"]
    lines += [f"all_model_checkpoint_paths: {json.dumps(_stored(p, directory, relative))}"
              for p in all_prefixes]
    with atomic_path(_state_path(directory, latest_filename)) as tmp:
        with open(tmp, "w") as f:
            f.write("\n".join(lines) + "\n")


_LINE = re.compile(r'^\s*(model_checkpoint_path|all_model_checkpoint_paths)\s*:\s*(".*")\s*$')


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The `CheckpointState` recorded in `checkpoint_dir` (paths joined to the directory
    when relative), or None when there is no state file."""
    path = _state_path(os.fspath(checkpoint_dir), latest_filename)
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return None
    latest, every = None, []
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is None:
            if line.strip():
                raise ValueError(f"{path}: not a checkpoint state file (line {line!r})")
            continue
        p = os.path.join(os.fspath(checkpoint_dir), json.loads(m.group(2)))
        if m.group(1) == "model_checkpoint_path":
            latest = p
        else:
            every.append(p)
    return CheckpointState(latest, every) if latest is not None else None


def checkpoint_exists(checkpoint_prefix):
    """Whether the files of checkpoint `checkpoint_prefix` exist."""
    return all(os.path.exists(p) for p in _paths(checkpoint_prefix))


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the newest checkpoint saved in `checkpoint_dir`, or None."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None or not checkpoint_exists(state.model_checkpoint_path):
        return None
    return state.model_checkpoint_path

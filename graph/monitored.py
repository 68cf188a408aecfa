"""`train.MonitoredTrainingSession` and `train.MonitoredSession`: a Session run with hooks.

`MonitoredTrainingSession(checkpoint_dir=..., hooks=[...])` builds the default graph's
Scaffold, restores the latest checkpoint of `checkpoint_dir` (or initialises the variables),
saves checkpoints there (every `save_checkpoint_secs`, 600 by default, or
`save_checkpoint_steps`, and at the end), and hands back a `MonitoredSession`: each `run`
calls the hooks' before_run / after_run around it, `should_stop()` turns true when a hook
asks, and leaving its `with` block on `errors.OutOfRangeError` (the input's end) ends it
quietly, calling the hooks' `end`, as TF does. One process, the chief: is_chief=False raises
NotImplementedError (no parameter servers to wait for); no summaries are written.

>>> import os, tempfile
>>> from dualgrad import graph as tf
>>> with tf.Graph().as_default():
...     step = tf.train.get_or_create_global_step()
...     train_op = tf.assign_add(step, 1)
...     d = tempfile.mkdtemp()
...     hooks = [tf.train.StopAtStepHook(last_step=5)]
...     with tf.train.MonitoredTrainingSession(checkpoint_dir=d, hooks=hooks) as sess:
...         while not sess.should_stop():
...             _ = sess.run(train_op)
>>> os.path.basename(tf.train.latest_checkpoint(d))
'model.ckpt-5'
"""
from __future__ import annotations

from .core import get_default_graph
from .errors import OutOfRangeError
from .hooks import CheckpointSaverHook, Scaffold, run_hooked
from .saver import latest_checkpoint
from .session import Session

__all__ = ["MonitoredSession", "MonitoredTrainingSession", "ChiefSessionCreator"]

_DEFAULT = object()


class ChiefSessionCreator:
    """Makes the session of a MonitoredSession: the scaffold finalised, the checkpoint
    (`checkpoint_filename_with_path`, or the latest in `checkpoint_dir`) restored or the
    variables initialised."""

    def __init__(self, scaffold=None, master="", config=None, checkpoint_dir=None,
                 checkpoint_filename_with_path=None):
        self.scaffold = scaffold or Scaffold()
        self._config, self._dir = config, checkpoint_dir
        self._path = checkpoint_filename_with_path

    def create_session(self):
        self.scaffold.finalize()
        sess = Session(graph=get_default_graph(), config=self._config)
        checkpoint = self._path or (latest_checkpoint(self._dir) if self._dir else None)
        self.scaffold.prepare_session(sess, checkpoint)
        return sess


class MonitoredSession:
    """`MonitoredSession(session_creator=None, hooks=None)`: see the module's text."""

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120):
        self._hooks = list(hooks or ())
        self.graph = get_default_graph()
        for h in self._hooks:
            h.begin()
        self._sess = (session_creator or ChiefSessionCreator()).create_session()
        for h in self._hooks:
            h.after_create_session(self._sess, None)
        self._stop = self._closed = False

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Session.run with the hooks around it."""
        if self._closed:
            raise RuntimeError("Run called on a closed MonitoredSession.")
        out, stop = run_hooked(self._sess, fetches, self._hooks, feed_dict)
        self._stop = self._stop or stop
        return out

    def should_stop(self):
        return self._stop or self._closed

    def close(self):
        self._close(ended=True)

    def _close(self, ended):
        if self._closed:
            return
        try:
            if ended:
                for h in self._hooks:
                    h.end(self._sess)
        finally:
            self._closed = True
            self._sess.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        ended = exc_type is None or issubclass(exc_type, (OutOfRangeError, StopIteration))
        self._close(ended)
        return ended and exc_type is not None


def MonitoredTrainingSession(master="", is_chief=True,  # noqa: N802 - TF's name
                             checkpoint_dir=None, scaffold=None, hooks=None, chief_only_hooks=None,
                             save_checkpoint_secs=_DEFAULT, save_summaries_steps=_DEFAULT,
                             save_summaries_secs=_DEFAULT, config=None,
                             stop_grace_period_secs=120, log_step_count_steps=100,
                             max_wait_secs=7200, save_checkpoint_steps=_DEFAULT,
                             summary_dir=None):
    """A MonitoredSession for training (see the module's text)."""
    if not is_chief:
        raise NotImplementedError("MonitoredTrainingSession(is_chief=False): a worker waits "
                                  "for a chief over parameter servers, which dualgrad does "
                                  "not have; with graph.distributed every rank is a chief "
                                  "(pass checkpoint_dir on rank 0 only)")
    scaffold = scaffold or Scaffold()
    all_hooks = list(chief_only_hooks or ())
    steps = None if save_checkpoint_steps is _DEFAULT else save_checkpoint_steps
    secs = None if save_checkpoint_secs is _DEFAULT else save_checkpoint_secs
    if steps is None and save_checkpoint_secs is _DEFAULT:
        secs = 600
    if checkpoint_dir and (steps or secs):
        all_hooks.append(CheckpointSaverHook(checkpoint_dir, save_secs=None if steps else secs,
                                             save_steps=steps, scaffold=scaffold))
    all_hooks += list(hooks or ())
    creator = ChiefSessionCreator(scaffold, master, config, checkpoint_dir)
    return MonitoredSession(creator, all_hooks, stop_grace_period_secs)

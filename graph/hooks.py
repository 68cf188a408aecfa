"""TF1's session-run hooks and `train.Scaffold`: what an Estimator's training loop calls.

A hook sees every `Session.run` the loop makes: `begin()` before the graph is finalised,
`after_create_session(session, coord)` once variables are initialised or restored,
`before_run(run_context)` returning `SessionRunArgs` (extra fetches and feeds),
`after_run(run_context, run_values)` with their results, and `end(session)` when the loop
ends (also at the end of the input). `run_context.request_stop()` ends the loop after this
step. `run_hooked` is that loop's one step.

>>> from dualgrad import graph as tf
>>> from dualgrad.graph.hooks import run_hooked
>>> step = tf.train.get_or_create_global_step()
>>> inc = tf.assign_add(step, 1)
>>> hook = tf.train.StopAtStepHook(last_step=3)
>>> hook.begin()
>>> with tf.Session() as sess:
...     sess.run(tf.global_variables_initializer())
...     hook.after_create_session(sess, None)
...     while not run_hooked(sess, inc, [hook])[1]:
...         pass
...     int(sess.run(step))
3
"""
from __future__ import annotations

import collections
import os
import time

import numpy as np

from .variables import get_global_step

__all__ = ["SessionRunHook", "SessionRunArgs", "SessionRunContext", "SessionRunValues",
           "StopAtStepHook", "LoggingTensorHook", "NanTensorHook", "NanLossDuringTrainingError",
           "CheckpointSaverHook", "CheckpointSaverListener", "Scaffold", "run_hooked"]


class SessionRunArgs(collections.namedtuple("SessionRunArgs", "fetches feed_dict options")):
    """What a hook adds to the next `Session.run`: fetches (any structure run accepts),
    feeds, and run options."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunValues(collections.namedtuple("SessionRunValues",
                                              "results options run_metadata")):
    """The results of a hook's `SessionRunArgs.fetches`, in their structure."""


class SessionRunContext:
    """The step being run: `original_args` (the loop's own fetches and feeds), `session`,
    and `request_stop()`."""

    def __init__(self, original_args, session):
        self.original_args, self.session = original_args, session
        self._stop = False

    def request_stop(self):
        self._stop = True

    @property
    def stop_requested(self):
        return self._stop


class SessionRunHook:
    """Base class: every method does nothing; override the ones a hook needs."""

    def begin(self):
        pass

    def after_create_session(self, session, coord):
        pass

    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        pass

    def end(self, session):
        pass


def run_hooked(sess, fetches, hooks, feed_dict=None):
    """One `Session.run` of `fetches` with every hook's before_run / after_run around it:
    (fetches' values, whether a hook asked to stop)."""
    context = SessionRunContext(SessionRunArgs(fetches, feed_dict), sess)
    asks = [h.before_run(context) for h in hooks]
    feeds = dict(feed_dict or {})
    for a in asks:
        if a is not None and a.feed_dict:
            clash = set(a.feed_dict) & set(feeds)
            if clash:
                raise RuntimeError(f"Same tensor is fed by two hooks or by a hook and the "
                                   f"caller: {sorted(t.name for t in clash)}")
            feeds.update(a.feed_dict)
    extra = [None if a is None else a.fetches for a in asks]
    out, results = sess.run([fetches, [e for e in extra if e is not None]], feeds or None)
    results = iter(results)
    for h, e in zip(hooks, extra):
        h.after_run(context, SessionRunValues(None if e is None else next(results), None, None))
    return out, context.stop_requested


def _global_step_tensor():
    step = get_global_step()
    if step is None:
        raise RuntimeError("Global step should be created to use StopAtStepHook.")
    return step


class StopAtStepHook(SessionRunHook):
    """Stop once the global step reaches `last_step`, or `num_steps` steps after the value
    it had when the session was created (exactly one of the two)."""

    def __init__(self, num_steps=None, last_step=None):
        if (num_steps is None) == (last_step is None):
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and num_steps < 0:
            raise ValueError("num_steps must be non-negative.")
        if last_step is not None and last_step < 0:
            raise ValueError("last_step must be non-negative.")
        self._num_steps, self._last_step = num_steps, last_step

    @property
    def last_step(self):
        return self._last_step

    def begin(self):
        self._step = _global_step_tensor()

    def after_create_session(self, session, coord):
        now = int(session.run(self._step))
        if self._last_step is None:
            self._last_step = now + self._num_steps
        self._reached = now >= self._last_step

    def before_run(self, run_context):
        if self._reached:   # NOTE: nothing left to do: stop before another step runs
            run_context.request_stop()
        return None

    def after_run(self, run_context, run_values):
        if int(run_context.session.run(self._step)) >= self._last_step:
            run_context.request_stop()


class LoggingTensorHook(SessionRunHook):
    """Log the values of `tensors` (a dict of tags to tensors or tensor names, or a list of
    them) every `every_n_iter` steps or `every_n_secs` seconds, and at the end with
    at_end=True, through `graph.logging.info` ("tag = value, tag = value (0.123 sec)")."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False,
                 formatter=None):
        only_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and "
                             "every_n_secs must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if not isinstance(tensors, dict):
            tensors = {t if isinstance(t, str) else t.name: t for t in tensors}
        self._tensors, self._order = tensors, list(tensors)
        self._every_iter, self._every_secs = every_n_iter, every_n_secs
        self._at_end, self._formatter = at_end, formatter

    def begin(self):
        """Tensors given by name (`"softmax_tensor"` or `"softmax_tensor:0"`) are looked up
        in the default graph now, as TF does."""
        from .core import get_default_graph
        g = get_default_graph()
        self._fetch = {k: g.get_tensor_by_name(t if ":" in t else f"{t}:0")
                       if isinstance(t, str) else t for k, t in self._tensors.items()}
        self._iter, self._last_time = 0, None

    def _due(self):
        if self._every_iter is not None:
            return self._iter % self._every_iter == 0
        if self._every_secs is not None:
            return self._last_time is None or time.time() - self._last_time >= self._every_secs
        return False

    def before_run(self, run_context):
        self._now = self._due()
        return SessionRunArgs(self._fetch) if self._now else None

    def after_run(self, run_context, run_values):
        if self._now:
            self._log(run_values.results)
        self._iter += 1

    def end(self, session):
        if self._at_end:
            self._log(session.run(self._fetch))

    def _log(self, values):
        from .tf_logging import info
        now = time.time()
        if self._formatter is not None:
            info(self._formatter(values))
        else:
            text = ", ".join(f"{k} = {values[k]}" for k in self._order)
            if self._last_time is not None:
                text += f" ({now - self._last_time:.3f} sec)"
            info(text)
        self._last_time = now


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self):
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Raise NanLossDuringTrainingError (or, with fail_on_nan_loss=False, log and stop) when
    `loss_tensor` is NaN after a step."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss, self._fail = loss_tensor, fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        if np.isnan(run_values.results):
            if self._fail:
                raise NanLossDuringTrainingError
            from .tf_logging import error
            error("Model diverged with loss = NaN.")
            run_context.request_stop()


class CheckpointSaverHook(SessionRunHook):
    """Save a checkpoint `checkpoint_dir/checkpoint_basename-<global step>` (the directory
    is made if missing) when the session is created, every `save_steps` steps or
    `save_secs` seconds (exactly one), and at the end, with `saver` (or `scaffold.saver`).
    Each listener's before_save / after_save (session, global_step) is called around every
    save."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None,
                 checkpoint_basename="model.ckpt", scaffold=None, listeners=None):
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        if (save_secs is None) == (save_steps is None):
            raise ValueError("exactly one of every_steps and every_secs should be provided.")
        self._dir, self._saver, self._scaffold = checkpoint_dir, saver, scaffold
        self._path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._every_steps, self._every_secs = save_steps, save_secs
        self._listeners = list(listeners or ())

    def begin(self):
        self._step_tensor = _global_step_tensor()
        os.makedirs(self._dir, exist_ok=True)
        for ls in self._listeners:
            ls.begin()

    def after_create_session(self, session, coord):
        self._save(session, int(session.run(self._step_tensor)))

    def after_run(self, run_context, run_values):
        step = int(run_context.session.run(self._step_tensor))
        due_steps = self._every_steps is not None and step >= self._last + self._every_steps
        due_secs = self._every_secs is not None and time.time() >= self._time + self._every_secs
        if step != self._last and (due_steps or due_secs):
            if self._save(run_context.session, step):
                run_context.request_stop()

    def end(self, session):
        step = int(session.run(self._step_tensor))
        if step != self._last:
            self._save(session, step)
        for ls in self._listeners:
            ls.end(session, step)

    def _save(self, session, step):
        """Save at `step`; True when a listener asks to stop."""
        from .tf_logging import info
        for ls in self._listeners:
            ls.before_save(session, step)
        info(f"Saving checkpoints for {step} into {self._path}.")
        saver = self._saver if self._saver is not None else self._scaffold.saver
        saver.save(session, self._path, global_step=step)
        self._last, self._time = step, time.time()
        return any([ls.after_save(session, step) for ls in self._listeners])


class CheckpointSaverListener:
    """Called by CheckpointSaverHook around each save: begin(), before_save(session,
    global_step_value), after_save(session, global_step_value) (returning True stops
    training) and end(session, global_step_value). Every method does nothing here."""

    def begin(self):
        pass

    def before_save(self, session, global_step_value):
        pass

    def after_save(self, session, global_step_value):
        pass

    def end(self, session, global_step_value):
        pass


class Scaffold:
    """What an Estimator's session is made with: `init_op` (default: initialise the global
    variables), `local_init_op` (default: initialise the local variables), `init_fn(scaffold,
    session)` called after init_op (not when a checkpoint is restored), `init_feed_dict`,
    and the `saver` that checkpoints (default: a Saver of the global variables, keeping the
    RunConfig's keep_checkpoint_max). `finalize()` fills the defaults in the default graph.
    ready_op, ready_for_local_init_op and summary_op are kept as given; dualgrad checks
    readiness by running the init ops, not by asking a ready_op."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None,
                 saver=None, copy_from_scaffold=None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            c = copy_from_scaffold
            init_op, init_feed_dict = init_op or c.init_op, init_feed_dict or c.init_feed_dict
            init_fn, ready_op = init_fn or c._user_init_fn, ready_op or c.ready_op
            ready_for_local_init_op = ready_for_local_init_op or c.ready_for_local_init_op
            local_init_op = local_init_op or c.local_init_op
            summary_op, saver = summary_op or c.summary_op, saver or c.saver
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self.init_op, self.init_feed_dict, self.ready_op = init_op, init_feed_dict, ready_op
        self.ready_for_local_init_op, self.local_init_op = ready_for_local_init_op, local_init_op
        self.summary_op, self.saver = summary_op, saver

    @property
    def init_fn(self):
        return self._init_fn

    def finalize(self, max_to_keep=5, keep_checkpoint_every_n_hours=10000.0):
        """Fill the missing ops from the default graph; returns self."""
        from .saver import Saver
        from .variables import global_variables_initializer, local_variables_initializer
        if self.init_op is None:
            self.init_op = global_variables_initializer()
        if self.local_init_op is None:
            self.local_init_op = local_variables_initializer()
        if self.saver is None:
            self.saver = Saver(max_to_keep=max_to_keep,
                               keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
                               allow_empty=True)
        return self

    def prepare_session(self, sess, checkpoint):
        """Restore `checkpoint` into sess (when not None) or run init_op, init_fn; then the
        local init op."""
        if checkpoint is not None:
            self.saver.restore(sess, checkpoint)
        else:
            sess.run(self.init_op, self.init_feed_dict)
            if self._init_fn is not None:
                self._init_fn(sess)
        sess.run(self.local_init_op)

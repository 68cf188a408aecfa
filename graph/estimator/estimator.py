"""`tf.estimator.Estimator`: a model_fn trained, evaluated and used for prediction on Sessions.

Each call (`train`, `evaluate`, `predict`) builds a new Graph: the global step, then the
input_fn's `(features, labels)` (tensors, or a `tf.data.Dataset` whose iterator gives them),
then `model_fn(features, labels, mode, params, config)` (each argument passed only when the
model_fn names it), which returns an `EstimatorSpec`. A Session runs that spec until the
input ends (`errors.OutOfRangeError`) or a step limit is reached. The variables come from the
latest checkpoint in `model_dir` when there is one (so a second `train` continues where the
first stopped), otherwise from their initialisers (TF 1.15 logs that it evaluates or predicts
with initial values; so does dualgrad). Checkpoints are dualgrad's own `train.Saver` files,
`model_dir/model.ckpt-<step>`; nothing else is written, and nothing outside `model_dir` (a
temporary directory when it is None, as in TF). No summaries or graph files are written, and
there is no export to SavedModel.
"""
from __future__ import annotations

import copy
import inspect
import os
import tempfile

import numpy as np

from dualgrad.ops.core import located

from .. import tf_logging as logging
from .spec import ModeKeys
from ..core import Graph
from ..data import Dataset
from ..errors import OutOfRangeError
from ..hooks import (CheckpointSaverHook, LoggingTensorHook, NanTensorHook, StopAtStepHook,
                     run_hooked)
from ..math_ops import set_random_seed
from ..metrics import mean
from ..checkpoint_init import list_variables, load_variable
from ..control_flow import group
from ..saver import Saver, checkpoint_exists, latest_checkpoint
from ..session import Session
from ..train import get_or_create_global_step
from ..variables import trainable_variables
from .spec import EstimatorSpec, RunConfig, _hooks

__all__ = ["Estimator"]

_MODEL_FN_ARGS = {"features", "labels", "mode", "params", "config", "self"}


def _arg_names(fn):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return set()
    return {n for n, p in params.items()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _check_model_fn(model_fn, params):
    if model_fn is None:
        raise located("model_fn must be provided to Estimator.", ValueError)
    if not callable(model_fn):
        raise located(f"model_fn must be callable, given: {model_fn}", TypeError)
    args = _arg_names(model_fn)
    if "features" not in args:
        raise located(f"model_fn ({model_fn}) must include features argument.", ValueError)
    if params is not None and "params" not in args:
        raise located(f"model_fn ({model_fn}) does not include params argument, but "
                      f"params ({params}) is passed to Estimator.", ValueError)
    extra = sorted(args - _MODEL_FN_ARGS)
    if extra:
        raise located(f"model_fn ({model_fn}) has following not expected args: {extra}",
                      ValueError)


def _model_dir(model_dir, config):
    if model_dir is not None and config.model_dir is not None \
            and os.path.abspath(model_dir) != os.path.abspath(config.model_dir):
        raise located(f"`model_dir` are set both in constructor and `RunConfig`, but with "
                      f"different values. In constructor: '{model_dir}', in `RunConfig`: "
                      f"'{config.model_dir}' ", ValueError)
    model_dir = model_dir if model_dir is not None else config.model_dir
    if model_dir is None:
        model_dir = tempfile.mkdtemp()
        logging.warning(f"Using temporary folder as model directory: {model_dir}")
    return os.fspath(model_dir)


def _split(result):
    """(features, labels) of what an input_fn (or its dataset's iterator) gives."""
    if isinstance(result, Dataset):
        result = result.make_one_shot_iterator().get_next()
    if isinstance(result, (tuple, list)):
        if len(result) != 2:
            raise located(f"input_fn should return (features, labels) or features; it "
                          f"returned a {type(result).__name__} of {len(result)} items", ValueError)
        return result[0], result[1]
    return result, None


class Estimator:
    """`Estimator(model_fn, model_dir=None, config=None, params=None, warm_start_from=None)`.

    >>> import numpy as np
    >>> from dualgrad import graph as tf
    >>> def model_fn(features, labels, mode):
    ...     w = tf.get_variable("w", [1], initializer=tf.zeros_initializer())
    ...     pred = features["x"] * w
    ...     if mode == tf.estimator.ModeKeys.PREDICT:
    ...         return tf.estimator.EstimatorSpec(mode, predictions=pred)
    ...     loss = tf.reduce_mean(tf.square(pred - labels))
    ...     step = tf.train.get_global_step()
    ...     train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    ...     return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
    >>> x = np.arange(1, 5, dtype=np.float32)
    >>> fn = tf.estimator.inputs.numpy_input_fn({"x": x}, 3 * x, batch_size=4, num_epochs=None,
    ...                                         shuffle=False)
    >>> est = tf.estimator.Estimator(model_fn)
    >>> _ = est.train(fn, steps=50)
    >>> metrics = est.evaluate(fn, steps=1)
    >>> round(float(est.get_variable_value("w")[0]), 3), int(metrics["global_step"])
    (3.0, 50)
    """

    def __init__(self, model_fn, model_dir=None, config=None, params=None,
                 warm_start_from=None):
        if config is None:
            config = RunConfig()
        elif not isinstance(config, RunConfig):
            raise located(f"config must be an instance of `RunConfig`, but provided "
                          f"{config}.", ValueError)
        _check_model_fn(model_fn, params)
        self._model_dir = _model_dir(model_dir, config)
        self._config = config.replace(model_dir=self._model_dir)
        self._model_fn, self._params = model_fn, copy.deepcopy(params or {})
        if warm_start_from is not None and not isinstance(warm_start_from, (str, os.PathLike)):
            raise located("warm_start_from: only a checkpoint path or directory "
                          "is supported (no WarmStartSettings)", NotImplementedError)
        self._warm_start = warm_start_from

    model_dir = property(lambda self: self._model_dir)
    config = property(lambda self: self._config)
    params = property(lambda self: copy.deepcopy(self._params))
    model_fn = property(lambda self: self._model_fn)

    # -- checkpoints -----------------------------------------------------------------------
    def latest_checkpoint(self):
        """The prefix of the newest checkpoint in model_dir, or None."""
        return latest_checkpoint(self._model_dir)

    def _checkpoint(self):
        found = self.latest_checkpoint()
        if found is None:
            raise located(f"Could not find trained model in model_dir: {self._model_dir}.",
                          ValueError)
        return found

    def _checkpoint_at(self, path):
        """`path` (which must exist) or the latest checkpoint, or None."""
        if path is None:
            return self.latest_checkpoint()
        if not checkpoint_exists(path):
            raise located(f"Could not find trained model at {path}.", ValueError)
        return path

    def get_variable_names(self):
        return [name for name, _ in list_variables(self._checkpoint())]

    def get_variable_value(self, name):
        """The value of variable `name` in the latest checkpoint (a NumPy array)."""
        return load_variable(self._checkpoint(), name)

    def _saved_step(self):
        found = self.latest_checkpoint()
        return 0 if found is None else int(load_variable(found, "global_step"))

    # -- one graph per call ----------------------------------------------------------------
    def _call_input_fn(self, input_fn, mode):
        args, kw = _arg_names(input_fn), {}
        for name, value in (("mode", mode), ("params", self.params), ("config", self._config)):
            if name in args:
                kw[name] = value
        return _split(input_fn(**kw))

    def _call_model_fn(self, features, labels, mode):
        args, kw = _arg_names(self._model_fn), {}
        if "labels" in args:
            kw["labels"] = labels
        elif labels is not None:
            raise located("model_fn does not take labels, but input_fn returns labels.",
                          ValueError)
        for name, value in (("mode", mode), ("params", self.params), ("config", self._config)):
            if name in args:
                kw[name] = value
        spec = self._model_fn(features=features, **kw)
        if not isinstance(spec, EstimatorSpec):
            raise located(f"model_fn should return an EstimatorSpec, it returned "
                          f"{type(spec).__name__}.", ValueError)
        return spec

    def _build(self, input_fn, mode):
        g = Graph()
        with g.as_default():
            if self._config.tf_random_seed is not None:
                set_random_seed(self._config.tf_random_seed)
            step = get_or_create_global_step()
            features, labels = self._call_input_fn(input_fn, mode)
            if mode == ModeKeys.PREDICT:
                labels = None
            spec = self._call_model_fn(features, labels, mode)
        return g, spec, step

    def _session(self, g, spec, checkpoint, hooks, warm_start=False):
        """A session of g with the variables restored or initialised (and warm-started, on
        a first training), then the hooks' after_create_session; hooks began before."""
        with g.as_default():
            spec.scaffold.finalize(self._config.keep_checkpoint_max,
                                   self._config.keep_checkpoint_every_n_hours)
            for h in hooks:
                h.begin()
        sess = Session(graph=g, config=self._config.session_config)
        try:
            spec.scaffold.prepare_session(sess, checkpoint)
            if warm_start and checkpoint is None and self._warm_start is not None:
                self._warm_start_into(sess, g)
            for h in hooks:
                h.after_create_session(sess, None)
        except BaseException:
            sess.close()
            raise
        return sess

    # -- train -----------------------------------------------------------------------------
    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        """Train until the input ends, `steps` more steps, or the global step reaches
        `max_steps` (not both); returns self."""
        if steps is not None and max_steps is not None:
            raise located("Can not provide both steps and max_steps.", ValueError)
        if steps is not None and steps <= 0:
            raise located(f"Must specify steps > 0, given: {steps}", ValueError)
        if max_steps is not None and max_steps <= 0:
            raise located(f"Must specify max_steps > 0, given: {max_steps}", ValueError)
        if max_steps is not None and self._saved_step() >= max_steps:
            logging.info("Skipping training since max_steps has already saved.")
            return self
        hooks = list(_hooks(hooks, "train(hooks=...)"))
        if steps is not None or max_steps is not None:
            hooks.append(StopAtStepHook(steps, max_steps))
        g, spec, step = self._build(input_fn, ModeKeys.TRAIN)
        loss = self._train(g, spec, step, hooks, saving_listeners)
        logging.info(f"Loss for final step: {loss}.")
        return self

    def _train_hooks(self, spec, step, hooks, listeners):
        c = self._config
        chief = list(spec.training_chief_hooks)
        if c.save_checkpoints_steps or c.save_checkpoints_secs:
            chief.append(CheckpointSaverHook(self._model_dir, c.save_checkpoints_secs,
                                             c.save_checkpoints_steps, scaffold=spec.scaffold,
                                             listeners=listeners))
        elif listeners:
            raise located("There should be a CheckpointSaverHook to use saving_listeners. "
                          "Please set one of the RunConfig.save_checkpoints_steps or "
                          "RunConfig.save_checkpoints_secs.", ValueError)
        every = [NanTensorHook(spec.loss)]
        if c.log_step_count_steps:
            every.append(LoggingTensorHook({"loss": spec.loss, "step": step},
                                           every_n_iter=c.log_step_count_steps))
        return chief + hooks + list(spec.training_hooks) + every

    def _train(self, g, spec, step, hooks, listeners):
        hooks = self._train_hooks(spec, step, hooks, listeners)
        checkpoint = self.latest_checkpoint()
        with self._session(g, spec, checkpoint, hooks, warm_start=True) as sess:
            loss, before = None, int(sess.run(step))
            try:
                while True:
                    (_, loss), stop = run_hooked(sess, [spec.train_op, spec.loss], hooks)
                    if stop:
                        break
                    before = self._check_step_moves(sess, step, before)
            except OutOfRangeError:
                pass
            for h in hooks:
                h.end(sess)
        return loss

    @staticmethod
    def _check_step_moves(sess, step, before):
        now = int(sess.run(step))
        if now == before:
            logging.log_first_n(logging.WARN, "It seems that global step "
                                "(tf.train.get_global_step) has not been increased. Current "
                                f"value (could be stable): {now} vs previous value: {before}. "
                                "You could increase the global step by passing "
                                "tf.train.get_global_step() to Optimizer.apply_gradients or "
                                "Optimizer.minimize.", 1)
        return now

    def _warm_start_into(self, sess, g):
        """The trainable variables' values from warm_start_from (a checkpoint or a directory
        of them), on a first training (TF's default WarmStartSettings: every trainable
        variable, by name)."""
        path = os.fspath(self._warm_start)
        found = latest_checkpoint(path) if os.path.isdir(path) else path
        if found is None:
            raise located(f"warm_start_from: no checkpoint in {path}", ValueError)
        with g.as_default():
            Saver(var_list=trainable_variables()).restore(sess, found)
        logging.info(f"Warm-starting from: {found}")

    def _checkpoint_or_init(self, checkpoint_path, what):
        """The checkpoint to run from; None (logged, as TF) runs on the initial values."""
        checkpoint = self._checkpoint_at(checkpoint_path)
        if checkpoint is None:
            logging.info(f"Could not find trained model in model_dir: {self._model_dir}, "
                         f"running initialization to {what}.")
        return checkpoint

    # -- evaluate --------------------------------------------------------------------------
    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """Run the eval_metric_ops' update ops over the input (until it ends, or `steps`
        batches): a dict of their values, with `loss` (the mean of the batches' losses) and
        `global_step` (the checkpoint's)."""
        if steps is not None and steps <= 0:
            raise located(f"Must specify steps > 0, given: {steps}", ValueError)
        hooks = list(_hooks(hooks, "evaluate(hooks=...)"))
        checkpoint = self._checkpoint_or_init(checkpoint_path, "evaluate")
        g, spec, step = self._build(input_fn, ModeKeys.EVAL)
        if "loss" in spec.eval_metric_ops:
            raise located('Metric with name "loss" is not allowed, because Estimator '
                          'already defines a default metric with the same name.', ValueError)
        with g.as_default():
            metrics = dict(spec.eval_metric_ops, loss=mean(spec.loss))
            update = group(*[u for _, u in metrics.values()])
            values = {k: v for k, (v, _) in metrics.items()}
        values["global_step"] = step
        hooks = list(spec.evaluation_hooks) + hooks
        with self._session(g, spec, checkpoint, hooks) as sess:
            done = 0
            try:
                while steps is None or done < steps:
                    _, stop = run_hooked(sess, update, hooks)
                    done += 1
                    if steps is not None and done % max(1, steps // 10) == 0:
                        logging.info(f"Evaluation [{done}/{steps}]")
                    if stop:
                        break
            except OutOfRangeError:
                pass
            results = sess.run(values)
            for h in hooks:
                h.end(sess)
        shown = ", ".join(f"{k} = {results[k]}" for k in sorted(results))
        logging.info(f"Saving dict for global step {results['global_step']}: {shown}")
        return results

    # -- predict ---------------------------------------------------------------------------
    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
        """A generator of the predictions, example by example (a dict's rows when the
        predictions are a dict; with yield_single_examples=False, batch by batch), until
        the input ends."""
        hooks = list(_hooks(hooks, "predict(hooks=...)"))
        checkpoint = self._checkpoint_or_init(checkpoint_path, "predict")
        g, spec, _ = self._build(input_fn, ModeKeys.PREDICT)
        predictions = _pick(spec.predictions, predict_keys)
        hooks = list(spec.prediction_hooks) + hooks
        with self._session(g, spec, checkpoint, hooks) as sess:
            try:
                while True:
                    batch, stop = run_hooked(sess, predictions, hooks)
                    if yield_single_examples:
                        yield from _rows(batch)
                    else:
                        yield batch
                    if stop:
                        break
            except OutOfRangeError:
                pass
            for h in hooks:
                h.end(sess)


def _pick(predictions, keys):
    if keys is None:
        return predictions
    if not isinstance(predictions, dict):
        raise located("predict_keys argument is not valid in case of non-dict predictions.",
                      ValueError)
    keys = [keys] if isinstance(keys, str) else list(keys)
    picked = {k: predictions[k] for k in keys if k in predictions}
    if not picked:
        raise located(f"Expected to run at least one output from {sorted(predictions)}, "
                      f"provided {keys}.", ValueError)
    return picked


def _rows(batch):
    """One example at a time from a batch of predictions (all of one batch length)."""
    items = batch if isinstance(batch, dict) else {None: batch}
    lengths = set()
    for k, v in items.items():
        if np.ndim(v) == 0:
            what = "Predictions" if k is None else f"Prediction {k!r}"
            raise located(f"{what} must have rank >= 1 (a batch) to yield single "
                          f"examples; pass yield_single_examples=False", ValueError)
        lengths.add(len(v))
    if len(lengths) > 1:
        raise located(f"Batch length of predictions should be same. The predictions have "
                      f"batch lengths {sorted(lengths)}: {sorted(map(str, items))}", ValueError)
    for i in range(lengths.pop()):
        yield {k: v[i] for k, v in batch.items()} if isinstance(batch, dict) else batch[i]

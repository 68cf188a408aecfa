"""`EstimatorSpec` (what a model_fn returns) and `RunConfig` (how an Estimator runs)."""
from __future__ import annotations

import collections

from dualgrad.ops.core import located

from ..core import Node, Tensor
from ..hooks import Scaffold, SessionRunHook
from ..math_ops import reshape

__all__ = ["EstimatorSpec", "RunConfig", "ModeKeys"]


class ModeKeys:
    """The mode an Estimator calls its model_fn in (tf.estimator.ModeKeys)."""
    TRAIN, EVAL, PREDICT = "train", "eval", "infer"
    INFER = PREDICT   # contrib.learn's name


_MODES = (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)


def _hooks(hooks, what):
    hooks = tuple(hooks or ())
    for h in hooks:
        if not isinstance(h, SessionRunHook):
            raise located(f"All hooks must be SessionRunHook instances, given: {h} "
                          f"(in {what})", TypeError)
    return hooks


def _check_loss(loss, mode):
    if loss is None:
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise located(f"Missing loss. (EstimatorSpec in mode {mode!r} needs the loss "
                          f"the model_fn computes)", ValueError)
        return None
    if not isinstance(loss, Tensor):
        raise located(f"loss must be Tensor, given: {loss}", TypeError)
    if loss.shape.num_elements() not in (None, 1):
        raise located(f"Loss must be scalar, given: {loss.shape}", ValueError)
    if loss.shape != ():   # NOTE: as TF, a loss of shape (1,) or unknown is reshaped to ()
        with loss.graph.as_default():
            loss = reshape(loss, [])
    return loss


def _check_predictions(predictions, mode):
    if predictions is None:
        if mode == ModeKeys.PREDICT:
            raise located("Missing predictions. (EstimatorSpec in mode 'infer' needs the "
                          "predictions tensor or dict of tensors)", ValueError)
        return {}
    items = predictions.items() if isinstance(predictions, dict) else [(None, predictions)]
    for key, value in items:
        if not isinstance(value, Tensor):
            what = "predictions" if key is None else f"predictions[{key}]"
            raise located(f"{what} must be Tensor, given: {value}", TypeError)
    return predictions


def _check_metrics(eval_metric_ops):
    metrics = dict(eval_metric_ops or {})
    for key, pair in metrics.items():
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise located(f"Values of eval_metric_ops must be (metric_value, update_op) "
                          f"tuples, given: {pair} for key: {key}", TypeError)
    return metrics


class EstimatorSpec(collections.namedtuple("EstimatorSpec", [
        "mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs",
        "training_chief_hooks", "training_hooks", "scaffold", "evaluation_hooks",
        "prediction_hooks"])):
    """What a model_fn returns for its mode: TRAIN needs `loss` and `train_op`, EVAL `loss`
    (and `eval_metric_ops`, a dict of `(value, update_op)` pairs such as `tf.metrics.accuracy`
    returns), PREDICT `predictions` (a tensor or a dict of tensors). Checked as TF checks
    them: ValueError for what the mode needs and lacks, TypeError for a wrong type."""

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None,
                export_outputs=None, training_chief_hooks=None, training_hooks=None,
                scaffold=None, evaluation_hooks=None, prediction_hooks=None):
        if mode not in _MODES:
            raise located(f"mode={mode!r} unrecognized; expected one of "
                          f"tf.estimator.ModeKeys' {_MODES}", ValueError)
        predictions = _check_predictions(predictions, mode)
        loss = _check_loss(loss, mode)
        if train_op is None and mode == ModeKeys.TRAIN:
            raise located("Missing train_op. (EstimatorSpec in mode 'train' needs the op "
                          "that trains, e.g. optimizer.minimize(loss, global_step=...))",
                          ValueError)
        if train_op is not None and not isinstance(train_op, (Tensor, Node)):
            raise located(f"train_op must be Operation or Tensor, given: {train_op}", TypeError)
        scaffold = Scaffold() if scaffold is None else scaffold
        if not isinstance(scaffold, Scaffold):
            raise located(f"scaffold must be tf.train.Scaffold. Given: {scaffold}", TypeError)
        return super().__new__(
            cls, mode, predictions, loss, train_op, _check_metrics(eval_metric_ops),
            export_outputs, _hooks(training_chief_hooks, "training_chief_hooks"),
            _hooks(training_hooks, "training_hooks"), scaffold,
            _hooks(evaluation_hooks, "evaluation_hooks"),
            _hooks(prediction_hooks, "prediction_hooks"))


_DEFAULT = object()
_FIELDS = ("model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
           "save_checkpoints_secs", "session_config", "keep_checkpoint_max",
           "keep_checkpoint_every_n_hours", "log_step_count_steps", "train_distribute",
           "device_fn", "protocol", "eval_distribute", "experimental_distribute",
           "experimental_max_worker_delay", "session_creation_timeout_secs")


class RunConfig:
    """tf.estimator.RunConfig: where checkpoints go and how often. Checkpoints are saved
    every `save_checkpoints_steps` steps or (by default) every `save_checkpoints_secs`=600
    seconds, and at the start and end of each `train`; `keep_checkpoint_max` (5) are kept.
    The loss is logged every `log_step_count_steps` steps. `tf_random_seed` seeds each graph
    the Estimator builds. save_summary_steps is kept but no summaries are written (dualgrad
    writes no event files for an Estimator); a distribution strategy raises
    NotImplementedError; TF_CONFIG is not read (one process, the chief)."""

    is_chief, master, evaluation_master, task_type, task_id = True, "", "", "worker", 0
    num_ps_replicas, num_worker_replicas, global_id_in_cluster, cluster_spec = 0, 1, 0, None

    def __init__(self, model_dir=None, tf_random_seed=None, save_summary_steps=100,
                 save_checkpoints_steps=_DEFAULT, save_checkpoints_secs=_DEFAULT,
                 session_config=None, keep_checkpoint_max=5,
                 keep_checkpoint_every_n_hours=10000, log_step_count_steps=100,
                 train_distribute=None, device_fn=None, protocol=None, eval_distribute=None,
                 experimental_distribute=None, experimental_max_worker_delay=None,
                 session_creation_timeout_secs=7200):
        steps = None if save_checkpoints_steps is _DEFAULT else save_checkpoints_steps
        secs = None if save_checkpoints_secs is _DEFAULT else save_checkpoints_secs
        if steps is not None and secs is not None:
            raise located("save_checkpoints_steps and save_checkpoints_secs cannot be both "
                          "set.", ValueError)
        if steps is None and save_checkpoints_secs is _DEFAULT:
            secs = 600
        for what, d in (("train_distribute", train_distribute),
                        ("eval_distribute", eval_distribute),
                        ("experimental_distribute", experimental_distribute)):
            if d is not None:
                raise located(f"RunConfig({what}=...): no distribution strategies; use "
                              f"dualgrad.graph.distributed", NotImplementedError)
        values = dict(locals())   # NOTE: the arguments by name: _FIELDS picks them
        values.update(save_checkpoints_steps=steps, save_checkpoints_secs=secs)
        self._values = {k: values[k] for k in _FIELDS}
        self._values["model_dir"] = None if model_dir is None else str(model_dir)

    def __getattr__(self, name):
        if name in _FIELDS:
            return self.__dict__["_values"][name]
        raise AttributeError(f"'RunConfig' object has no attribute {name!r}")

    def replace(self, **kwargs):
        """A copy with the given properties changed (only those RunConfig's constructor
        takes: ValueError for another)."""
        wrong = sorted(set(kwargs) - set(_FIELDS))
        if wrong:
            raise located(f"Replacing {wrong} is not supported. Allowed properties are "
                          f"{sorted(_FIELDS)}.", ValueError)
        values = {**self._values, **kwargs}
        if "save_checkpoints_steps" in kwargs and "save_checkpoints_secs" not in kwargs \
                and kwargs["save_checkpoints_steps"] is not None:
            values["save_checkpoints_secs"] = None
        if "save_checkpoints_secs" in kwargs and "save_checkpoints_steps" not in kwargs \
                and kwargs["save_checkpoints_secs"] is not None:
            values["save_checkpoints_steps"] = None
        return self._copy_with(values)

    def _copy_with(self, values):
        """A RunConfig of these constructor values (a subclass adds what it keeps besides)."""
        return RunConfig(**values)

    def __repr__(self):
        return f"RunConfig({', '.join(f'{k}={v!r}' for k, v in self._values.items())})"

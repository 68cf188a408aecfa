"""TF1's `tf.contrib.tpu` (`tf.estimator.tpu`) on a machine without TPUs: `TPUEstimator(...,
use_tpu=False)` runs train / evaluate / predict on the CPU, as TF 1.15 did.

What TF 1.15 did on that path, and so does this module: `input_fn(params)` and
`model_fn(features, labels, mode, params)` must take `params`, and receive
`params['batch_size']`, the batch size of the mode (`train_batch_size`, `eval_batch_size`,
`predict_batch_size`, unchanged: one shard), and the model_fn also `params['use_tpu']`
(False). A model_fn may return a `TPUEstimatorSpec`, converted with `as_estimator_spec()`:
`eval_metrics=(metric_fn, tensors)` becomes `eval_metric_ops=metric_fn(*tensors)` (or
`**tensors`), `scaffold_fn()` gives the Scaffold, and `host_call=(fn, tensors)` is run with
every step. Checkpoints, hooks and the loops are `tf.estimator.Estimator`'s.

There is no TPU here: `use_tpu=True` raises, on train / evaluate / predict, the RuntimeError TF
raised when it found no TPU cores (evaluate runs on the CPU with `eval_on_tpu=False`, as TF);
`TPUClusterResolver` raises the ValueError TF raised when it could not find a TPU, without
contacting any server. `CrossShardOptimizer` over one shard is the optimizer it wraps.
"""
from __future__ import annotations

import collections
import copy
import inspect
import re

from dualgrad.ops.core import located

from .. import tf_logging as logging
from ..hooks import SessionRunArgs, SessionRunHook
from ..losses import Reduction
from .estimator import Estimator, _arg_names, _split
from .spec import EstimatorSpec, ModeKeys, RunConfig as _BaseRunConfig, _hooks

__all__ = ["InputPipelineConfig", "TPUConfig", "RunConfig", "TPUEstimatorSpec",
           "TPUEstimator", "CrossShardOptimizer", "TPUClusterResolver"]

_NO_TPU = ("dualgrad runs on the CPU and has no TPU: pass use_tpu=False to TPUEstimator to "
           "train, evaluate and predict on the CPU")


def _positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, int):
        raise located(f"{name} must be int, got {type(value)}", TypeError)
    if value <= 0:
        raise located(f"{name} must be positive, got {value}", ValueError)


class InputPipelineConfig:
    """How TPUConfig.per_host_input_for_training feeds the shards (kept; one shard here)."""
    PER_SHARD_V1, PER_HOST_V1, PER_HOST_V2, BROADCAST, SLICED = 1, 2, 3, 4, 5


_ITERATIONS = re.compile(r"^[1-9]\d*[smh]?$")
_CORES_PER_REPLICA = (1, 2, 4, 8, 16, 32, 64, 128)


class TPUConfig(collections.namedtuple("TPUConfig", [
        "iterations_per_loop", "num_shards", "num_cores_per_replica",
        "per_host_input_for_training", "tpu_job_name", "initial_infeed_sleep_secs",
        "input_partition_dims", "eval_training_input_configuration",
        "experimental_host_call_every_n_steps"])):
    """TF 1.15's TPUConfig, checked as TF checks it (per_host_input_for_training True /
    False become PER_HOST_V1 / PER_SHARD_V1). On the CPU none of it changes what runs."""

    def __new__(cls, iterations_per_loop=2, num_shards=None, num_cores_per_replica=None,
                per_host_input_for_training=True, tpu_job_name=None,
                initial_infeed_sleep_secs=None, input_partition_dims=None,
                eval_training_input_configuration=InputPipelineConfig.PER_HOST_V1,
                experimental_host_call_every_n_steps=1):
        if not (isinstance(iterations_per_loop, int) and iterations_per_loop > 0
                or isinstance(iterations_per_loop, str)
                and _ITERATIONS.match(iterations_per_loop)):
            raise located(f"Invalid TPUConfig `iterations_per_loop` value: "
                          f"{iterations_per_loop!r} (a positive int, or '<N>s', '<N>m', "
                          f"'<N>h')", ValueError)
        if num_shards is not None:
            _positive_int(num_shards, "TPUConfig num_shards")
        if input_partition_dims is not None:
            if len(input_partition_dims) not in (1, 2):
                raise located("input_partition_dims must be a list/tuple with one or two "
                              "elements.", ValueError)
            if per_host_input_for_training is not InputPipelineConfig.PER_HOST_V2:
                raise located("input_partition_dims is only supported in PER_HOST_V2 mode.",
                              ValueError)
            if num_cores_per_replica is None:
                raise located("input_partition_dims requires setting "
                              "num_cores_per_replica.", ValueError)
        if num_cores_per_replica is not None \
                and num_cores_per_replica not in _CORES_PER_REPLICA:
            raise located(f"num_cores_per_replica must be 1, 2, 4, 8, 16, 32, 64, 128; got "
                          f"{num_cores_per_replica}", ValueError)
        if eval_training_input_configuration not in (InputPipelineConfig.PER_HOST_V1,
                                                     InputPipelineConfig.SLICED):
            raise located(f"eval_training_input_configuration must be PER_HOST_V1 or SLICED; "
                          f"got {eval_training_input_configuration}", ValueError)
        if per_host_input_for_training is False:
            per_host_input_for_training = InputPipelineConfig.PER_SHARD_V1
        elif per_host_input_for_training is True:
            per_host_input_for_training = InputPipelineConfig.PER_HOST_V1
        if initial_infeed_sleep_secs:
            _positive_int(initial_infeed_sleep_secs, "TPUConfig initial_infeed_sleep_secs")
        return super().__new__(cls, iterations_per_loop, num_shards, num_cores_per_replica,
                               per_host_input_for_training, tpu_job_name,
                               initial_infeed_sleep_secs, input_partition_dims,
                               eval_training_input_configuration,
                               experimental_host_call_every_n_steps)


class RunConfig(_BaseRunConfig):
    """`tf.contrib.tpu.RunConfig(tpu_config=None, evaluation_master=None, master=None,
    cluster=None, **kwargs)`: tf.estimator.RunConfig's keywords, plus the TPUConfig and the
    master addresses (kept: the CPU path never connects to one). `cluster` is a cluster
    resolver whose `master()` gives the master, as in TF."""

    def __init__(self, tpu_config=None, evaluation_master=None, master=None, cluster=None,
                 **kwargs):
        super().__init__(**kwargs)
        self._tpu_config = tpu_config or TPUConfig()
        self._cluster = cluster
        if master is not None and cluster is not None:
            raise located("Both master and cluster are set.", ValueError)
        self._master = master if master is not None else \
            cluster.master() if cluster is not None else ""
        self._evaluation_master = self._master if evaluation_master is None \
            else evaluation_master

    tpu_config = property(lambda self: self._tpu_config)
    cluster = property(lambda self: self._cluster)
    master = property(lambda self: self._master)
    evaluation_master = property(lambda self: self._evaluation_master)

    def replace(self, **kwargs):
        """A copy with the given properties changed; `tpu_config` may be one of them."""
        tpu_config = kwargs.pop("tpu_config", self._tpu_config)
        new = super().replace(**kwargs)
        new._tpu_config = tpu_config
        return new

    def _copy_with(self, values):
        return RunConfig(tpu_config=self._tpu_config, master=self._master,
                         evaluation_master=self._evaluation_master, **values)


# -- the spec ----------------------------------------------------------------------------------
def _check_host_call(name, host_call):
    """TF's checks of `eval_metrics` and `host_call`: (fn, list or dict of tensors)."""
    if not isinstance(host_call, (tuple, list)):
        raise located(f"{name} should be tuple or list", ValueError)
    if len(host_call) != 2:
        raise located(f"{name} should have two elements.", ValueError)
    fn, tensors = host_call
    if not callable(fn):
        raise located(f"{name}[0] should be callable.", TypeError)
    if not isinstance(tensors, (tuple, list, dict)):
        raise located(f"{name}[1] should be tuple or list, or dict.", ValueError)
    if isinstance(tensors, (tuple, list)) and not _takes_varargs(fn) \
            and len(tensors) != len(_arg_names(fn)):
        raise located(f"In TPUEstimatorSpec.{name}, length of tensors {len(tensors)} does "
                      f"not match method args of the function, which takes "
                      f"{len(_arg_names(fn))}.", RuntimeError)


def _takes_varargs(fn):
    try:
        return any(p.kind is p.VAR_POSITIONAL
                   for p in inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return True


def _call_host(fn, tensors):
    return fn(**tensors) if isinstance(tensors, dict) else fn(*tensors)


class _HostCallHook(SessionRunHook):
    """Runs what host_call's function returned with every step (TF's CPU path)."""

    def __init__(self, fetches):
        self._fetches = fetches

    def before_run(self, run_context):
        return SessionRunArgs(self._fetches)


class TPUEstimatorSpec(collections.namedtuple("TPUEstimatorSpec", [
        "mode", "predictions", "loss", "train_op", "eval_metrics", "export_outputs",
        "scaffold_fn", "host_call", "training_hooks", "evaluation_hooks",
        "prediction_hooks"])):
    """What a TPUEstimator model_fn returns: EstimatorSpec's fields, with
    `eval_metrics=(metric_fn, tensors)` in place of eval_metric_ops, `scaffold_fn` (called
    to make the Scaffold) and `host_call=(fn, tensors)`. `as_estimator_spec()` is the
    EstimatorSpec the CPU runs."""

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metrics=None,
                export_outputs=None, scaffold_fn=None, host_call=None, training_hooks=None,
                evaluation_hooks=None, prediction_hooks=None):
        for name, value in (("eval_metrics", eval_metrics), ("host_call", host_call)):
            if value is not None:
                _check_host_call(name, value)
        return super().__new__(cls, mode, predictions, loss, train_op, eval_metrics,
                               export_outputs, scaffold_fn, host_call,
                               _hooks(training_hooks, "training_hooks"),
                               _hooks(evaluation_hooks, "evaluation_hooks"),
                               _hooks(prediction_hooks, "prediction_hooks"))

    def as_estimator_spec(self):
        """The equivalent EstimatorSpec, as TF built it to train / evaluate on the CPU."""
        metrics = None if self.eval_metrics is None else _call_host(*self.eval_metrics)
        hooks = () if self.host_call is None else (_HostCallHook(_call_host(*self.host_call)),)
        return EstimatorSpec(self.mode, predictions=self.predictions, loss=self.loss,
                             train_op=self.train_op, eval_metric_ops=metrics,
                             export_outputs=self.export_outputs,
                             scaffold=self.scaffold_fn() if self.scaffold_fn else None,
                             training_hooks=self.training_hooks + hooks,
                             evaluation_hooks=self.evaluation_hooks + hooks,
                             prediction_hooks=self.prediction_hooks + hooks)


# -- the estimator -----------------------------------------------------------------------------
_RESERVED = ("batch_size", "context")


def _add_param(params, key, value):
    if hasattr(params, "set_hparam"):   # NOTE: contrib.training.HParams, as TF
        if key in params.values():
            params.set_hparam(key, value)
        else:
            params.add_hparam(key, value)
    else:
        params[key] = value


def _needs_params(fn, what):
    if "params" not in _arg_names(fn):
        raise located(f"{what} ({fn}) does not include params argument, required by "
                      f"TPUEstimator to pass batch size as params['batch_size']", ValueError)


class TPUEstimator(Estimator):
    """`TPUEstimator(model_fn, model_dir=None, config=tpu.RunConfig(...), params=None,
    use_tpu=True, train_batch_size=None, eval_batch_size=None, predict_batch_size=None, ...)`.

    With use_tpu=False everything runs on the CPU as tf.estimator.Estimator, the mode's
    batch size reaching input_fn and model_fn as params['batch_size'].

    >>> import numpy as np
    >>> from dualgrad import graph as tf
    >>> def input_fn(params):
    ...     x = np.arange(8, dtype=np.float32)
    ...     ds = tf.data.Dataset.from_tensor_slices(({"x": x}, 2 * x))
    ...     return ds.repeat().batch(params["batch_size"])
    >>> def model_fn(features, labels, mode, params):
    ...     w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
    ...     loss = tf.reduce_mean(tf.square(features["x"] * w - labels))
    ...     opt = tf.train.GradientDescentOptimizer(0.02)
    ...     step = opt.minimize(loss, global_step=tf.train.get_global_step())
    ...     return tf.contrib.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=step)
    >>> est = tf.contrib.tpu.TPUEstimator(model_fn, config=tf.contrib.tpu.RunConfig(),
    ...                                   use_tpu=False, train_batch_size=4)
    >>> round(float(est.train(input_fn, steps=40).get_variable_value("w")), 3)
    2.0
    """

    def __init__(self, model_fn=None, model_dir=None, config=None, params=None, use_tpu=True,
                 train_batch_size=None, eval_batch_size=None, predict_batch_size=None,
                 batch_axis=None, eval_on_tpu=True, export_to_tpu=True, export_to_cpu=True,
                 warm_start_from=None, embedding_config_spec=None,
                 export_saved_model_api_version=1):
        if config is None or not isinstance(config, RunConfig):
            raise located("`config` must be provided with type `tpu_config.RunConfig`",
                          ValueError)
        if params is not None and any(k in params for k in _RESERVED):
            raise located(f"{list(_RESERVED)} are reserved keys but existed in params "
                          f"{params}.", ValueError)
        if use_tpu:
            if train_batch_size is None:
                raise located("`train_batch_size` cannot be `None`", ValueError)
            _positive_int(train_batch_size, "train_batch_size")
        for name, size in (("eval_batch_size", eval_batch_size),
                           ("predict_batch_size", predict_batch_size)):
            if use_tpu and size is not None:
                _positive_int(size, name)
        if embedding_config_spec is not None:
            raise located("TPUEstimator(embedding_config_spec=...): TPU embeddings are not "
                          "provided; use tf.nn.embedding_lookup in the model_fn",
                          NotImplementedError)
        super().__init__(model_fn, model_dir=model_dir, config=config, params=params,
                         warm_start_from=warm_start_from)
        self._use_tpu, self._eval_on_tpu = bool(use_tpu), bool(eval_on_tpu)
        self._batch_sizes = {ModeKeys.TRAIN: train_batch_size,
                             ModeKeys.EVAL: eval_batch_size,
                             ModeKeys.PREDICT: predict_batch_size}

    def _on_cpu(self, mode):
        """Whether `mode` runs on the CPU; otherwise TF's error when it finds no TPU."""
        if not self._use_tpu or (mode == ModeKeys.EVAL and not self._eval_on_tpu):
            return True
        raise located("Cannot find any TPU cores in the system. Please double check "
                      "Tensorflow master address and TPU worker(s). Available devices are "
                      "['/job:localhost/replica:0/task:0/device:CPU:0']. "
                      f"({_NO_TPU})", RuntimeError)

    def _mode_params(self, mode):
        params = self.params
        if self._batch_sizes[mode] is not None:
            _add_param(params, "batch_size", self._batch_sizes[mode])
        return params

    def _call_input_fn(self, input_fn, mode):
        _needs_params(input_fn, "input_fn")
        args, kw = _arg_names(input_fn), {"params": self._mode_params(mode)}
        for name, value in (("mode", mode), ("config", self._config)):
            if name in args:
                kw[name] = value
        logging.info(f"Running {mode} on CPU")
        return _split(input_fn(**kw))

    def _call_model_fn(self, features, labels, mode):
        _needs_params(self._model_fn, "model_fn")
        args, kw = _arg_names(self._model_fn), {}
        if "labels" in args:
            kw["labels"] = labels
        elif labels is not None:
            raise located("model_fn does not take labels, but input_fn returns labels.",
                          ValueError)
        params = self._mode_params(mode)
        _add_param(params, "use_tpu", False)
        for name, value in (("mode", mode), ("params", params),
                            ("config", copy.deepcopy(self._config))):
            if name in args:
                kw[name] = value
        spec = self._model_fn(features=features, **kw)
        if isinstance(spec, TPUEstimatorSpec):
            spec = spec.as_estimator_spec()
        if not isinstance(spec, EstimatorSpec):
            raise located(f"model_fn should return an EstimatorSpec or TPUEstimatorSpec, it "
                          f"returned {type(spec).__name__}.", ValueError)
        return spec

    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        self._on_cpu(ModeKeys.TRAIN)
        return super().train(input_fn, hooks=hooks, steps=steps, max_steps=max_steps,
                             saving_listeners=saving_listeners)

    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        self._on_cpu(ModeKeys.EVAL)
        return super().evaluate(input_fn, steps=steps, hooks=hooks,
                                checkpoint_path=checkpoint_path, name=name)

    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
        self._on_cpu(ModeKeys.PREDICT)
        yield from super().predict(input_fn, predict_keys=predict_keys, hooks=hooks,
                                   checkpoint_path=checkpoint_path,
                                   yield_single_examples=yield_single_examples)


# -- the optimizer and the resolver ------------------------------------------------------------
class CrossShardOptimizer:
    """`CrossShardOptimizer(opt, reduction=losses.Reduction.MEAN, name=...,
    group_assignment=None)`: on TPUs, the gradients summed over the shards. Here there is one
    shard (TF logs that it assumes 1 outside a TPU), so the sum is the gradient itself and
    every method is the wrapped optimizer's. (TF 1.15 still built a CrossReplicaSum node,
    which only a TPU could run.)"""

    def __init__(self, opt, reduction=Reduction.MEAN, name="CrossShardOptimizer",
                 group_assignment=None):
        if reduction not in (Reduction.SUM, Reduction.MEAN):
            raise located(f"Unsupported reduction: {reduction}.", ValueError)
        if group_assignment is not None:
            raise located("CrossShardOptimizer(group_assignment=...): there is one shard, "
                          "no groups of them", ValueError)
        self._opt, self._name = opt, name

    def compute_gradients(self, loss, var_list=None, **kwargs):
        logging.warning("CrossShardOptimizer should be used within a tpu_shard_context, "
                        "but got unset number_of_shards. Assuming 1.")
        return self._opt.compute_gradients(loss, var_list=var_list, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        return self._opt.apply_gradients(grads_and_vars, global_step, name)

    def minimize(self, loss, global_step=None, var_list=None, name=None):
        return self.apply_gradients(self.compute_gradients(loss, var_list), global_step, name)

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._opt.get_slot_names(*args, **kwargs)


class TPUClusterResolver:
    """`TPUClusterResolver(tpu=None, zone=None, project=None, job_name='worker', ...)`. TF
    looked the TPU up through the Cloud TPU API and the GCE metadata server; dualgrad never
    reaches the network and has no TPU, so constructing one raises TF's ValueError for a TPU
    it cannot find (pass use_tpu=False to TPUEstimator; leave RunConfig's cluster unset)."""

    def __init__(self, tpu=None, zone=None, project=None, job_name="worker",
                 coordinator_name=None, coordinator_address=None, credentials="default",
                 service=None, discovery_url=None):
        if not tpu:
            raise located("Please provide a TPU Name to connect to. (dualgrad does not look "
                          f"one up; {_NO_TPU})", ValueError)
        raise located(f"TPUClusterResolver(tpu={tpu!r}): dualgrad does not contact the Cloud "
                      f"TPU API or the GCE metadata server to find a TPU; {_NO_TPU}",
                      ValueError)

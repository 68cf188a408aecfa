"""The most used `tf.contrib` names: `contrib.layers` functions (TF1's contrib, removed in TF2):
`flatten`, `fully_connected` (variables `fully_connected/weights`, `…/biases`),
`batch_norm` (over `layers.batch_normalization`; update ops in `GraphKeys.UPDATE_OPS`),
`layer_norm` (variables `LayerNorm/beta`, `…/gamma`; epsilon 1e-12, contrib's),
`variance_scaling_initializer` (contrib's formula: truncated normal with stddev
sqrt(1.3 * factor / n), or uniform in ±sqrt(3 * factor / n)), and
`contrib.seq2seq.sequence_loss` and `tile_batch`, `contrib.rnn.DeviceWrapper` (placement:
the cell itself here), `contrib.data.map_and_batch`, `contrib.training.HParams`,
`contrib.slim.model_analyzer.analyze_vars`."""
from __future__ import annotations

import math

import numpy as np

from .init_ops import variance_scaling_initializer as _core_vs
from .layers import batch_normalization, flatten as _flatten
from .math_ops import reduce_sum, truncated_normal
from .nn import dropout as _dropout, relu, sparse_softmax_cross_entropy_with_logits
from .variable_scope import layer_scope, layer_variable, regularize_output
from .init_ops import compute_fans, glorot_uniform_initializer, zeros_initializer

__all__ = ["flatten", "fully_connected", "batch_norm", "dropout", "layer_norm", "normalize",
           "variance_scaling_initializer",
           "sequence_loss", "tile_batch", "DeviceWrapper", "map_and_batch", "HParams",
           "analyze_vars"]


def flatten(inputs, outputs_collections=None, scope=None):
    return _flatten(inputs, name=scope)


def fully_connected(inputs, num_outputs, activation_fn=relu, normalizer_fn=None,
                    normalizer_params=None, weights_initializer=None,
                    weights_regularizer=None, biases_initializer=zeros_initializer(),
                    biases_regularizer=None, reuse=None, variables_collections=None,
                    outputs_collections=None, trainable=True, scope=None):
    """`activation_fn(normalizer_fn(inputs @ weights) or inputs @ weights + biases)`, as
    contrib's (ReLU by default; no biases when a normalizer_fn is given)."""
    d_in = inputs.shape[-1]
    if d_in is None:
        raise ValueError("fully_connected: the last dimension of the inputs must be known")
    with layer_scope("fully_connected", scope, reuse, inputs):
        w = layer_variable("weights", (d_in, num_outputs), inputs.dtype, weights_initializer,
                           glorot_uniform_initializer(), weights_regularizer, trainable)
        y = inputs @ w
        if normalizer_fn is not None:
            y = normalizer_fn(y, **(normalizer_params or {}))
        elif biases_initializer is not None:
            y = y + layer_variable("biases", (num_outputs,), inputs.dtype, biases_initializer,
                                   zeros_initializer(), biases_regularizer, trainable)
        y = activation_fn(y) if activation_fn is not None else y
        return regularize_output(y, None)


def normalize(x, gamma, beta, axes):
    """(x - mean) / sqrt(var + eps) * gamma + beta over `axes`, contrib's layer norm (eps
    1e-12, 1e-3 for float16)."""
    from .nn import batch_normalization, moments
    mean, variance = moments(x, axes, keep_dims=True)
    eps = 1e-3 if np.dtype(x.dtype) == np.float16 else 1e-12
    return batch_normalization(x, mean, variance, beta, gamma, eps)


def layer_norm(inputs, center=True, scale=True, activation_fn=None, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True,
               begin_norm_axis=1, begin_params_axis=-1, scope=None):
    """contrib.layers.layer_norm: normalised over the axes from begin_norm_axis on, then
    times `gamma` (ones) plus `beta` (zeros) of shape inputs.shape[begin_params_axis:]."""
    from .init_ops import ones_initializer
    rank = inputs.ndim
    if rank is None:
        raise ValueError(f"Inputs {inputs.name} has undefined rank.")
    norm_axis = begin_norm_axis + rank if begin_norm_axis < 0 else begin_norm_axis
    if begin_params_axis >= rank or norm_axis >= rank:
        raise ValueError(f"begin_params_axis ({begin_params_axis}) and begin_norm_axis "
                         f"({norm_axis}) must be < rank(inputs) ({rank})")
    params = tuple(inputs.shape[begin_params_axis:])
    if None in params:
        raise ValueError(f"Inputs {inputs.name}: shape(inputs)[{begin_params_axis}:] is not "
                         f"fully defined: {inputs.shape}")
    with layer_scope("LayerNorm", scope, reuse, inputs):
        beta = layer_variable("beta", params, inputs.dtype, None, zeros_initializer(),
                              trainable=trainable) if center else None
        gamma = layer_variable("gamma", params, inputs.dtype, None, ones_initializer(),
                               trainable=trainable) if scale else None
        y = normalize(inputs, gamma, beta, list(range(norm_axis, rank)))
        return activation_fn(y) if activation_fn is not None else y


def dropout(inputs, keep_prob=0.5, noise_shape=None, is_training=True,
            outputs_collections=None, scope=None, seed=None):
    """contrib.layers.dropout: nn.dropout(inputs, keep_prob) while training, the inputs
    (an identity) otherwise; is_training a Python bool or a bool tensor (then a cond, as
    TF's smart_cond)."""
    from .control_flow import cond, identity
    from .core import Tensor, name_scope

    def dropped():
        return _dropout(inputs, keep_prob, noise_shape=noise_shape, seed=seed)
    with name_scope(scope, "Dropout", [inputs]):
        if isinstance(is_training, Tensor):
            return cond(is_training, dropped, lambda: identity(inputs))
        return dropped() if is_training else identity(inputs)


def batch_norm(inputs, decay=0.999, center=True, scale=False, epsilon=0.001, activation_fn=None,
               param_initializers=None, param_regularizers=None, updates_collections="update_ops",
               is_training=True, reuse=None, variables_collections=None,
               outputs_collections=None, trainable=True, batch_weights=None, fused=None,
               data_format="NHWC", zero_debias_moving_mean=False, scope=None,
               renorm=False, renorm_clipping=None, renorm_decay=0.99, adjustment=None):
    """Batch normalisation over the last axis (NHWC), contrib's defaults (decay 0.999,
    no scale); the moving averages update through `GraphKeys.UPDATE_OPS`."""
    if updates_collections is None or batch_weights is not None or zero_debias_moving_mean \
            or renorm or data_format != "NHWC":
        raise NotImplementedError("batch_norm: updates_collections=None, batch_weights, "
                                  "zero_debias_moving_mean, renorm and NCHW are not supported")
    y = batch_normalization(inputs, momentum=decay, epsilon=epsilon, center=center,
                            scale=scale, training=is_training, trainable=trainable,
                            name=scope or "BatchNorm", reuse=reuse)
    return activation_fn(y) if activation_fn is not None else y


class variance_scaling_initializer(_core_vs):  # noqa: N801 - TF's name
    def __init__(self, factor=2.0, mode="FAN_IN", uniform=False, seed=None, dtype="float32"):
        mode = {"FAN_IN": "fan_in", "FAN_OUT": "fan_out", "FAN_AVG": "fan_avg"}[mode.upper()]
        super().__init__(factor, mode, "uniform" if uniform else "truncated_normal", seed, dtype)

    def _make(self, shape, dtype):
        if self.distribution == "uniform":
            return super()._make(shape, dtype)
        fan_in, fan_out = compute_fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}
        return truncated_normal(shape, 0.0, math.sqrt(1.3 * self.scale / max(1.0, n[self.mode])),
                                dtype=dtype, seed=self.seed)


def sequence_loss(logits, targets, weights, average_across_timesteps=True,
                  average_across_batch=True, sum_over_timesteps=False, sum_over_batch=False,
                  softmax_loss_function=None, name=None):
    """Weighted cross-entropy of (batch, time, classes) logits against (batch, time) class
    ids, averaged (or summed) over the time steps and the batch as contrib.seq2seq's."""
    if average_across_timesteps and sum_over_timesteps or average_across_batch and sum_over_batch:
        raise ValueError("sequence_loss: average and sum over the same axis both requested")
    xent = softmax_loss_function(labels=targets, logits=logits) if softmax_loss_function else \
        sparse_softmax_cross_entropy_with_logits(labels=targets, logits=logits)
    xent = xent * weights
    axes = [a for a, on in ((0, average_across_batch or sum_over_batch),
                            (1, average_across_timesteps or sum_over_timesteps)) if on]
    if not axes:
        return xent
    total = reduce_sum(xent, axis=axes)
    if average_across_batch and average_across_timesteps:
        return total / (reduce_sum(weights) + 1e-12)
    if average_across_batch or average_across_timesteps:
        return total / (reduce_sum(weights, axis=axes) + 1e-12)
    return total


def tile_batch(t, multiplier, name=None):
    """Each batch entry repeated `multiplier` times in a row: (B, …) -> (B * multiplier, …),
    as beam search needs (a nested tuple of tensors is tiled entry by entry)."""
    if isinstance(t, (tuple, list)):
        parts = [tile_batch(x, multiplier) for x in t]
        return type(t)(*parts) if hasattr(t, "_fields") else type(t)(parts)
    from .math_ops import expand_dims, reshape, tile
    rest = list(t.shape[1:])
    if None in rest:
        raise ValueError(f"tile_batch: all dims but the batch must be known, got {t.shape}")
    y = tile(expand_dims(t, 1), [1, multiplier] + [1] * len(rest))
    return reshape(y, [-1] + rest)


class DeviceWrapper:
    """contrib.rnn.DeviceWrapper(cell, device): the cell placed on `device`. dualgrad
    computes on the CPU, so it is the cell: calls and attributes go to it."""

    def __init__(self, cell, device):
        self._cell, self.device = cell, device

    def __call__(self, *args, **kwargs):
        return self._cell(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._cell, name)


def map_and_batch(map_func, batch_size, num_parallel_batches=None, drop_remainder=False,
                  num_parallel_calls=None):
    """For `dataset.apply(...)`: `dataset.map(map_func).batch(batch_size, drop_remainder)`."""
    return lambda ds: ds.map(map_func).batch(batch_size, drop_remainder)


class HParams:
    """contrib.training.HParams: hyperparameters as attributes; `parse("a=1,b=x")` sets them
    from a string with each one's type, `values()` gives a dict."""

    def __init__(self, hparam_def=None, model_structure=None, **kwargs):
        self._types = {}
        for k, v in kwargs.items():
            self.add_hparam(k, v)

    def add_hparam(self, name, value):
        if name in self._types:
            raise ValueError(f"Hyperparameter name is reserved: {name}")
        self._types[name] = type(value)
        setattr(self, name, value)

    def set_hparam(self, name, value):
        if name not in self._types:
            raise KeyError(f"Unknown hyperparameter: {name}")
        setattr(self, name, value)

    def parse(self, values):
        for item in filter(None, (s.strip() for s in values.split(","))):
            name, _, text = item.partition("=")
            if name not in self._types:
                raise ValueError(f"Unknown hyperparameter type for {name}")
            kind = self._types[name]
            value = text.lower() in ("true", "1") if kind is bool else kind(text)
            setattr(self, name, value)
        return self

    def values(self):
        return {k: getattr(self, k) for k in self._types}

    def get(self, key, default=None):
        return getattr(self, key, default)

    def __contains__(self, key):
        return key in self._types

    def __repr__(self):
        return f"HParams({self.values()})"


def analyze_vars(variables, print_info=False):
    """(total number of values, total bytes) of `variables`; prints a line per variable
    when `print_info`, as slim's model analyzer."""
    total, total_bytes = 0, 0
    if print_info:
        print("---------\nVariables: name (type shape) [size]\n---------")
    for v in variables:
        n = int(np.prod(v.shape)) if v.shape else 1
        b = n * np.dtype(v.dtype).itemsize
        total, total_bytes = total + n, total_bytes + b
        if print_info:
            print(f"{v.name} ({np.dtype(v.dtype).name} {'x'.join(map(str, v.shape))}) "
                  f"[{n}, bytes: {b}]")
    if print_info:
        print(f"Total size of variables: {total}\nTotal bytes of variables: {total_bytes}")
    return total, total_bytes

"""`graph.contrib.rnn`: where TF1 code written before `tf.nn.rnn_cell` finds the RNN cells
and `static_rnn` (the same objects as in `graph.nn`); `graph.contrib.layers`: the weight
regularizers (`l2_regularizer(scale)` is `scale * l2_loss(w)`, i.e. scale * sum(w**2) / 2;
`l1_regularizer`, `l1_l2_regularizer`, `apply_regularization`) and `xavier_initializer`;
the cells only contrib had (contrib_rnn.py); `graph.contrib.seq2seq` (seq2seq.py,
beam_search.py) and `legacy_seq2seq` (legacy_seq2seq.py); `graph.contrib.tpu` and
`cluster_resolver` (estimator/tpu.py: TPUEstimator on the CPU)."""
from __future__ import annotations

from types import SimpleNamespace

import numbers

from dualgrad import ops

from . import rnn_cell as _cells
from .core import GraphKeys, get_collection, get_default_graph
from .math_ops import reduce_sum
from .nn import l2_loss
from .init_ops import glorot_normal_initializer, glorot_uniform_initializer
from .rnn import bidirectional_dynamic_rnn, dynamic_rnn, static_bidirectional_rnn, static_rnn
from . import contrib_layers as _cl
from .contrib_rnn import (LayerNormBasicLSTMCell, NASCell, OutputProjectionWrapper,
                          ResidualWrapper)
from . import seq2seq as _s2s
from . import beam_search as _beam
from . import legacy_seq2seq as _legacy
from .estimator import tpu as _tpu
from .estimator.spec import ModeKeys
from . import checkpoint_init as _ckpt, lookup as _lookup, nest

__all__ = ["rnn", "layers", "seq2seq", "legacy_seq2seq", "data", "training", "slim", "learn",
           "tpu", "cluster_resolver", "lookup", "framework"]


def _scale(what, scale):
    if isinstance(scale, numbers.Integral) and not isinstance(scale, bool):
        raise ValueError(f"{what}: scale cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real) and scale < 0.0:
        raise ValueError(f"{what}: setting a scale less than 0 on a regularizer: {scale}")
    return None if isinstance(scale, numbers.Real) and scale == 0.0 else scale


def l1_regularizer(scale, scope=None):
    """`w -> scale * reduce_sum(abs(w))` (None when scale is 0), as TF1's contrib."""
    scale = _scale("l1_regularizer", scale)
    return lambda w: None if scale is None else scale * reduce_sum(ops.abs(w))


def l2_regularizer(scale, scope=None):
    """`w -> scale * l2_loss(w)` = scale * sum(w**2) / 2 (None when scale is 0)."""
    scale = _scale("l2_regularizer", scale)
    return lambda w: None if scale is None else scale * l2_loss(w)


def l1_l2_regularizer(scale_l1=1.0, scale_l2=1.0, scope=None):
    l1, l2 = l1_regularizer(scale_l1), l2_regularizer(scale_l2)

    def both(w):
        parts = [p for p in (l1(w), l2(w)) if p is not None]
        return None if not parts else parts[0] if len(parts) == 1 else parts[0] + parts[1]
    return both


def apply_regularization(regularizer, weights_list=None):
    """The sum of `regularizer(w)` over `weights_list` (default: the collection
    GraphKeys.WEIGHTS, else the trainable variables), added to REGULARIZATION_LOSSES."""
    if weights_list is None:
        weights_list = get_collection(GraphKeys.WEIGHTS) or \
            get_collection(GraphKeys.TRAINABLE_VARIABLES)
    if not weights_list:
        raise ValueError("No weights to regularize.")
    parts = [p for p in (regularizer(w) for w in weights_list) if p is not None]
    if not parts:
        return 0.0
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    get_default_graph().add_to_collection(GraphKeys.REGULARIZATION_LOSSES, total)
    return total


def xavier_initializer(uniform=True, seed=None, dtype=None):
    """Glorot uniform (or, uniform=False, truncated normal) over TF's fans."""
    cls = glorot_uniform_initializer if uniform else glorot_normal_initializer
    return cls(seed=seed)

rnn = SimpleNamespace(**{k: getattr(_cells, k) for k in _cells.__all__},
                      static_rnn=static_rnn, dynamic_rnn=dynamic_rnn,
                      static_bidirectional_rnn=static_bidirectional_rnn,
                      bidirectional_dynamic_rnn=bidirectional_dynamic_rnn)

layers = SimpleNamespace(l1_regularizer=l1_regularizer, l2_regularizer=l2_regularizer,
                         l1_l2_regularizer=l1_l2_regularizer,
                         apply_regularization=apply_regularization,
                         xavier_initializer=xavier_initializer,
                         xavier_initializer_conv2d=xavier_initializer,
                         flatten=_cl.flatten, fully_connected=_cl.fully_connected,
                         linear=lambda inputs, num_outputs, **kw: _cl.fully_connected(
                             inputs, num_outputs, activation_fn=None, **kw),
                         batch_norm=_cl.batch_norm, dropout=_cl.dropout,
                         layer_norm=_cl.layer_norm,
                         variance_scaling_initializer=_cl.variance_scaling_initializer)
seq2seq = SimpleNamespace(sequence_loss=_cl.sequence_loss, tile_batch=_cl.tile_batch,
                          **{k: getattr(_s2s, k) for k in _s2s.__all__},
                          **{k: getattr(_beam, k) for k in _beam.__all__})
legacy_seq2seq = SimpleNamespace(**{k: getattr(_legacy, k) for k in _legacy.__all__})
rnn.DeviceWrapper = _cl.DeviceWrapper
rnn.NASCell, rnn.LayerNormBasicLSTMCell = NASCell, LayerNormBasicLSTMCell
rnn.OutputProjectionWrapper, rnn.ResidualWrapper = OutputProjectionWrapper, ResidualWrapper
data = SimpleNamespace(map_and_batch=_cl.map_and_batch)
training = SimpleNamespace(HParams=_cl.HParams)
slim = SimpleNamespace(model_analyzer=SimpleNamespace(analyze_vars=_cl.analyze_vars))


learn = SimpleNamespace(ModeKeys=ModeKeys)
tpu = SimpleNamespace(**{k: getattr(_tpu, k) for k in _tpu.__all__
                         if k != "TPUClusterResolver"})
cluster_resolver = SimpleNamespace(TPUClusterResolver=_tpu.TPUClusterResolver)
lookup = SimpleNamespace(**{k: getattr(_lookup, k) for k in _lookup.__all__
                            if k != "tables_initializer"})
framework = SimpleNamespace(nest=nest, list_variables=_ckpt.list_variables,
                            load_checkpoint=_ckpt.load_checkpoint,
                            load_variable=_ckpt.load_variable)

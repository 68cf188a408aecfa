"""`graph.contrib.rnn`: where TF1 code written before `tf.nn.rnn_cell` finds the RNN cells
and `static_rnn` (the same objects as in `graph.nn`)."""
from __future__ import annotations

from types import SimpleNamespace

from . import rnn_cell as _cells
from .rnn import bidirectional_dynamic_rnn, dynamic_rnn, static_rnn

__all__ = ["rnn"]

rnn = SimpleNamespace(**{k: getattr(_cells, k) for k in _cells.__all__},
                      static_rnn=static_rnn, dynamic_rnn=dynamic_rnn,
                      bidirectional_dynamic_rnn=bidirectional_dynamic_rnn)

"""nn.RNN, nn.LSTM and nn.GRU: torch's layers (num_layers, batch_first, bidirectional,
dropout between layers, initial state), unrolled over time with the op library's ops; the
LSTM's steps (float32, float64, not packed, outside compile()'s trace and autocast) as one op
each way, `ops.lstm_seq` (ops/lstm_sequence.py), with the per-step ops' values bit for bit.

Parameter names, shapes, gate order and initialisation are torch's, so a torch state_dict
loads as it is.

>>> from dualgrad import eager
>>> from dualgrad.eager import nn
>>> lstm = nn.LSTM(input_size=3, hidden_size=5, num_layers=2, batch_first=True)
>>> out, (h, c) = lstm(eager.randn(4, 7, 3))
>>> tuple(out.shape), tuple(h.shape), tuple(c.shape)
((4, 7, 5), (2, 4, 5), (2, 4, 5))
"""
from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import TRACING, user_stacklevel
from .module import Module, _float, _redraw, _uniform
from . import functional as F
from .. import amp
from ..core import Tensor
from ..grad_mode import is_grad_enabled
from .utils.rnn import PackedSequence, packed_data, padded


def _lstm_step(gx, state, w_hh, b_hh):
    h, c = state
    z = gx + F.linear(h, w_hh, b_hh)
    c = ops.lstm_cell_c(z, c)
    return ops.lstm_cell_h(z, c), c


def _gru_step(gx, h, w_hh, b_hh):
    hidden = w_hh.shape[1]
    gi = ops.split(gx, hidden, axis=-1)
    gh = ops.split(F.linear(h, w_hh, b_hh), hidden, axis=-1)
    r = F.sigmoid(gi[0] + gh[0])
    z = F.sigmoid(gi[1] + gh[1])
    n = F.tanh(gi[2] + r * gh[2])
    return (1.0 - z) * n + z * h


def _rnn_step(act):
    def step(gx, h, w_hh, b_hh):
        return act(gx + F.linear(h, w_hh, b_hh))
    return step


def _input_gates(x, weights):
    """(x W_ih^T + b_ih for every step at once (T, N, gates * H), W_hh, b_hh), as torch's CPU
    layers: one product over all T * N rows instead of one per step; each step then adds
    h W_hh^T + b_hh to its slice (whose gradients eager's backward adds into one (T, N, G*H)
    total, ops/autodiff.py's grad_at). The LSTM's 50 steps: 100 products forward and back
    became 2, and the gates' sum per step one add fewer."""
    w_ih, w_hh, b_ih, b_hh = weights
    return F.linear(x, w_ih, b_ih), w_hh, b_hh


def _lstm_seq(x, state, weights, reverse):
    """The LSTM's T steps as one op each way (ops/lstm_sequence.py), whose values and gradients
    are the per-step ops' bit for bit: out[:T] is the output sequence, out[-1] the last c.
    NOTE: the sequence is a copy, as the per-step path's stack: a view of `out` would refuse
    the in-place writes torch allows on the output (and they would change what backward
    reads)."""
    gx, w_hh, b_hh = _input_gates(x, weights)
    h0, c0 = state
    save = is_grad_enabled() and any(t is not None and t.requires_grad
                                     for t in (gx, h0, c0, w_hh, b_hh))
    out = ops.lstm_seq(gx, h0, c0, w_hh, b_hh, reverse=reverse, save=save)
    steps = x.shape[0]
    return ops.copy(out[:steps]), (out[0 if reverse else steps - 1], out[-1])


def _one_op(x, state):
    """Whether the LSTM runs as lstm_seq: float32/float64 with steps, outside compile()'s
    trace, which records the per-step ops (the op's `decompose`) its optimiser fuses, and
    outside autocast, which lowers each step's product (F.linear) as torch's does."""
    return not TRACING[0] and amp.state() is None and x.shape[0] and \
        x.dtype in _SEQ_DTYPES and all(s.dtype == x.dtype for s in state)


_SEQ_DTYPES = (np.float32, np.float64)
_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


class RNNBase(Module):
    _gates = 1
    _lstm = False

    def flatten_parameters(self):
        """torch lays the weights out in one block for cuDNN here; on the CPU it does nothing,
        in torch as in dualgrad."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0, device=None,
                 dtype=None):
        super().__init__()
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        self.mode, self._gates = mode, _GATES[mode]
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if proj_size:
            raise NotImplementedError(f"{type(self).__name__}(proj_size={proj_size}) is not "
                                      f"supported by dualgrad")
        if not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so "
                          f"non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", UserWarning,
                          stacklevel=user_stacklevel())
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        dirs = 2 if bidirectional else 1
        bound, gh = 1.0 / math.sqrt(hidden_size), self._gates * hidden_size
        dt = np.dtype(dtype) if dtype is not None else _float()
        self._names = []
        for layer in range(num_layers):
            fan = input_size if layer == 0 else hidden_size * dirs
            for sfx in ("", "_reverse")[:dirs]:
                names = [f"weight_ih_l{layer}{sfx}", f"weight_hh_l{layer}{sfx}"]
                shapes = [(gh, fan), (gh, hidden_size)]
                if bias:
                    names += [f"bias_ih_l{layer}{sfx}", f"bias_hh_l{layer}{sfx}"]
                    shapes += [(gh,), (gh,)]
                for n, s in zip(names, shapes):
                    setattr(self, n, _uniform(s, bound, dt))
                self._names.append(names)

    def reset_parameters(self):
        """Draw every weight and bias anew, in place, uniform in +-1/sqrt(hidden_size)."""
        _redraw(self.parameters(), 1.0 / math.sqrt(self.hidden_size) if self.hidden_size
                else 0.0)

    @property
    def all_weights(self):
        """The parameters per layer and direction, each [weight_ih, weight_hh(, bias_ih,
        bias_hh)], as torch's."""
        return [[getattr(self, n) for n in names] for names in self._names]

    def _weights(self, layer, direction):
        names = self._names[layer * (2 if self.bidirectional else 1) + direction]
        ws = [getattr(self, n) for n in names]
        return ws if self.bias else ws + [None, None]

    def _zeros(self, x, n):
        from ..factories import zeros   # NOTE: a meta tensor when x's shape is symbolic
        return zeros((n, x.shape[1], self.hidden_size), dtype=x.dtype)

    def forward(self, input, hx=None):  # noqa: A002 - torch's argument name
        if type(self) is RNNBase:       # NOTE: torch's RNNBase has no forward of its own
            raise NotImplementedError('Module [RNNBase] is missing the required "forward" '
                                      'function')
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        x, unbatched = input, input.ndim == 2
        if input.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                             f"{input.ndim}D instead")
        x = ops.expand_dims(x, axis=1) if unbatched else x.transpose(0, 1) if self.batch_first \
            else x
        if x.shape[-1] != self.input_size:
            raise ValueError(f"{type(self).__name__}: input.size(-1) must be equal to "
                             f"input_size. Expected {self.input_size}, got {x.shape[-1]}")
        states = self._initial(x, hx, unbatched)
        out, finals = self._layers(x, states)
        finals = [ops.stack(*f, axis=0) for f in finals]
        if unbatched:
            out = ops.squeeze(out, axis=1)
            finals = [ops.squeeze(f, axis=1) for f in finals]
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, (tuple(finals) if self._lstm else finals[0])

    def _forward_packed(self, packed, hx):
        """Each sequence runs for its own length: the output is packed as the input, and
        h_n (c_n) hold each sequence's state after its last step, in the batch's order."""
        data, sizes, order, back = packed
        x, sizes = padded(data, sizes), [int(n) for n in sizes.tolist()]
        if hx is not None and order is not None:
            hx = tuple(ops.take(h, order._array, axis=1) for h in hx) if self._lstm else \
                ops.take(hx, order._array, axis=1)
        out, finals = self._layers(x, self._initial(x, hx, False), sizes)
        finals = [ops.stack(*f, axis=0) for f in finals]
        if back is not None:
            finals = [ops.take(f, back._array, axis=1) for f in finals]
        out = PackedSequence(packed_data(out, sizes), packed.batch_sizes, order, back)
        return out, (tuple(finals) if self._lstm else finals[0])

    def _initial(self, x, hx, unbatched):
        n = self.num_layers * (2 if self.bidirectional else 1)
        if hx is None:
            parts = [self._zeros(x, n)] * (2 if self._lstm else 1)
        else:
            parts = list(hx) if self._lstm else [hx]
            parts = [ops.expand_dims(p, axis=1) if unbatched else p for p in parts]
            want = (n, x.shape[1], self.hidden_size)
            for p in parts:
                if tuple(p.shape) != want:
                    raise RuntimeError(f"{type(self).__name__}: Expected hidden size {want}, "
                                       f"got {tuple(p.shape)}")
        return [[p[k] for p in parts] for k in range(n)]

    def _layers(self, x, states, sizes=None):
        dirs = 2 if self.bidirectional else 1
        finals = [[], []] if self._lstm else [[]]
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                run = self._run if sizes is None else functools.partial(self._run_packed,
                                                                         sizes=sizes)
                seq, last = run(x, states[layer * dirs + d], self._weights(layer, d),
                                reverse=d == 1)
                outs.append(seq)
                for f, v in zip(finals, last if self._lstm else (last,)):
                    f.append(v)
            x = outs[0] if dirs == 1 else ops.concat(*outs, axis=-1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, finals

    def _run(self, x, state, weights, reverse):
        if self._lstm and _one_op(x, state):
            return _lstm_seq(x, state, weights, reverse)
        state = tuple(state) if self._lstm else state[0]
        steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
        gx, w_hh, b_hh = _input_gates(x, weights)
        outs = [None] * x.shape[0]
        for t in steps:
            state = self._step(gx[t], state, w_hh, b_hh)
            outs[t] = state[0] if self._lstm else state
        return ops.stack(*outs, axis=0), state

    def _run_packed(self, x, state, weights, reverse, sizes):
        """_run where, at step t, only the first sizes[t] sequences (longest first) step; the
        others keep their state (the reverse direction starts each at its own last step) and
        their output rows are zeros."""
        parts, batch = list(state), x.shape[1]
        steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
        gx, w_hh, b_hh = _input_gates(x, weights)
        outs = [None] * x.shape[0]
        for t in steps:
            n = sizes[t]
            cur = [p[:n] for p in parts] if n < batch else parts
            new = self._step(gx[t, :n], tuple(cur) if self._lstm else cur[0], w_hh, b_hh)
            new = list(new) if self._lstm else [new]
            parts = [ops.concat(a, p[n:], axis=0) if n < batch else a
                     for a, p in zip(new, parts)]
            outs[t] = ops.pad(new[0], ((0, batch - n), (0, 0))) if n < batch else new[0]
        return ops.stack(*outs, axis=0), (tuple(parts) if self._lstm else parts[0])

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        for name, default in (("bias", True), ("batch_first", False), ("dropout", 0.0),
                              ("bidirectional", False)):
            if getattr(self, name) != default:
                s += f", {name}={getattr(self, name)}"
        return s


class LSTM(RNNBase):
    """output, (h_n, c_n) = lstm(input, (h_0, c_0)); gates in torch's order i, f, g, o."""
    _gates, _lstm = 4, True
    _step = staticmethod(_lstm_step)

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """output, h_n = gru(input, h_0); gates in torch's order r, z, n."""
    _gates = 3
    _step = staticmethod(_gru_step)

    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)


class RNN(RNNBase):
    """Elman RNN: h' = tanh(W_ih x + b_ih + W_hh h + b_hh) (or relu)."""

    def __init__(self, *args, nonlinearity="tanh", **kwargs):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             f"'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)
        self.nonlinearity = nonlinearity
        self._step = _rnn_step(F.tanh if nonlinearity == "tanh" else F.relu)

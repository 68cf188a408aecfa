"""Cells only `tf.contrib.rnn` had: `NASCell`, the recurrent cell found by "Neural
Architecture Search with Reinforcement Learning" (Zoph and Le, ICLR 2017), as TF 1.15's
contrib wrote it; `LayerNormBasicLSTMCell`; and the wrappers `OutputProjectionWrapper` and
`ResidualWrapper`.

With x the inputs, (c, m) the state, n = num_units, and the products split in 8 blocks of n
columns: `a = x @ kernel`, `b = m @ recurrent_kernel (+ bias)`, then

    l0 = sigmoid(a0 + b0)  l1 = relu(a1 + b1)  l2 = sigmoid(a2 + b2)  l3 = relu(a3 * b3)
    l4 = tanh(a4 + b4)     l5 = sigmoid(a5 + b5) l6 = tanh(a6 + b6)  l7 = sigmoid(a7 + b7)
    c' = tanh(tanh(l0 * l1) + c) * tanh(l2 + l3)
    m' = tanh(c' * tanh(tanh(l4 * l5) + sigmoid(l6 + l7)))   (@ projection_weights if num_proj)

The output is m'; the state `LSTMStateTuple(c', m')`.

>>> from dualgrad import graph
>>> x = graph.placeholder(graph.float32, (None, 5, 3))
>>> out, state = graph.nn.dynamic_rnn(graph.contrib.rnn.NASCell(4), x, dtype=graph.float32)
>>> [v.name for v in graph.trainable_variables()]
['rnn/nas_cell/recurrent_kernel:0', 'rnn/nas_cell/kernel:0']
"""
from __future__ import annotations

from dualgrad import ops
from dualgrad.ops.core import fmt_shape, located

from .contrib_layers import normalize
from .init_ops import constant_initializer, zeros_initializer
from .nn_dropout import dropout
from .core import Tensor
from .rnn_cell import CellWrapper, LSTMStateTuple, RNNCell
from .variable_scope import get_variable, variable_scope

__all__ = ["NASCell", "LayerNormBasicLSTMCell", "OutputProjectionWrapper", "ResidualWrapper"]

_NAS_BASE = 8


class NASCell(RNNCell):
    """`NASCell(num_units, num_proj=None, use_bias=False, reuse=None)` (`use_biases`, the
    name before TF 1.13, is accepted too). Variables `recurrent_kernel` (proj or n, 8n),
    `kernel` (depth, 8n), `bias` (8n, zeros, only with use_bias) and `projection_weights`
    (n, num_proj), under `nas_cell`."""
    _base_name = "nas_cell"

    def __init__(self, num_units, num_proj=None, use_bias=False, reuse=None, name=None,
                 dtype=None, use_biases=None):
        super().__init__(name, dtype)
        self.num_units = int(num_units)
        self.num_proj = None if num_proj is None else int(num_proj)
        self.use_bias = bool(use_bias if use_biases is None else use_biases)

    state_size = property(lambda self: LSTMStateTuple(self.num_units,
                                                      self.num_proj or self.num_units))
    output_size = property(lambda self: self.num_proj or self.num_units)

    def build(self, depth, dtype):
        n, m = self.num_units, self.num_proj or self.num_units
        self.recurrent_kernel = get_variable("recurrent_kernel", [m, _NAS_BASE * n],
                                             dtype=dtype)
        self.kernel = get_variable("kernel", [depth, _NAS_BASE * n], dtype=dtype)
        if self.use_bias:
            self.bias = get_variable("bias", [_NAS_BASE * n], dtype=dtype,
                                     initializer=zeros_initializer())
        if self.num_proj is not None:
            self.projection_weights = get_variable("projection_weights", [n, self.num_proj],
                                                   dtype=dtype)

    def call(self, inputs, state):
        c, m = state
        b = ops.matmul(m, self.recurrent_kernel)
        if self.use_bias:
            b = b + self.bias
        a = ops.split(ops.matmul(inputs, self.kernel), self.num_units, axis=1)
        b = ops.split(b, self.num_units, axis=1)
        sig, tanh, relu = ops.sigmoid, ops.tanh, ops.relu
        l0, l1 = sig(a[0] + b[0]), relu(a[1] + b[1])
        l2, l3 = sig(a[2] + b[2]), relu(a[3] * b[3])
        l4, l5 = tanh(a[4] + b[4]), sig(a[5] + b[5])
        l6, l7 = tanh(a[6] + b[6]), sig(a[7] + b[7])
        new_c = tanh(tanh(l0 * l1) + c) * tanh(l2 + l3)
        new_m = tanh(new_c * tanh(tanh(l4 * l5) + sig(l6 + l7)))
        if self.num_proj is not None:
            new_m = ops.matmul(new_m, self.projection_weights)
        return new_m, LSTMStateTuple(new_c, new_m)


class LayerNormBasicLSTMCell(RNNCell):
    """`LayerNormBasicLSTMCell(num_units, forget_bias=1.0, activation=tanh, layer_norm=True,
    norm_gain=1.0, norm_shift=0.0, dropout_keep_prob=1.0, dropout_prob_seed=None)`:
    the basic LSTM with each gate i, j, f, o of [x, h] @ kernel layer-normalised (scopes
    `input`, `transform`, `forget`, `output`, each with `gamma` = norm_gain and `beta` =
    norm_shift) and the new c too (`state`); no bias then (a `bias` without layer_norm).
    Recurrent dropout on activation(j) when dropout_keep_prob < 1 (Semeniuta et al. 2016)."""
    _base_name = "layer_norm_basic_lstm_cell"
    _NORMS = ("input", "transform", "forget", "output", "state")

    def __init__(self, num_units, forget_bias=1.0, input_size=None, activation=None,
                 layer_norm=True, norm_gain=1.0, norm_shift=0.0, dropout_keep_prob=1.0,
                 dropout_prob_seed=None, reuse=None):
        super().__init__()
        self.num_units, self.forget_bias = int(num_units), float(forget_bias)
        self.activation = activation or ops.tanh
        self.layer_norm, self.gain, self.shift = bool(layer_norm), norm_gain, norm_shift
        self.keep_prob, self.seed = dropout_keep_prob, dropout_prob_seed

    state_size = property(lambda self: LSTMStateTuple(self.num_units, self.num_units))
    output_size = property(lambda self: self.num_units)

    def build(self, depth, dtype):
        n = self.num_units
        self.kernel = get_variable("kernel", [depth + n, 4 * n], dtype=dtype)
        if not self.layer_norm:
            self.bias = get_variable("bias", [4 * n], dtype=dtype)
            return
        self.norms = {}
        for name in self._NORMS:
            with variable_scope(name):
                self.norms[name] = (
                    get_variable("gamma", [n], dtype=dtype,
                                 initializer=constant_initializer(self.gain)),
                    get_variable("beta", [n], dtype=dtype,
                                 initializer=constant_initializer(self.shift)))

    def _norm(self, x, name):
        if not self.layer_norm:
            return x
        gamma, beta = self.norms[name]
        return normalize(x, gamma, beta, [1])

    def call(self, inputs, state):
        c, h = state
        z = ops.matmul(ops.concat(inputs, h, axis=1), self.kernel)
        if not self.layer_norm:
            z = z + self.bias
        i, j, f, o = [self._norm(g, name) for g, name in zip(
            ops.split(z, self.num_units, axis=1), self._NORMS)]
        g = self.activation(j)
        if isinstance(self.keep_prob, Tensor) or float(self.keep_prob) < 1.0:
            g = dropout(g, self.keep_prob, seed=self.seed)
        new_c = self._norm(c * ops.sigmoid(f + self.forget_bias) + ops.sigmoid(i) * g, "state")
        new_h = self.activation(new_c) * ops.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)


class OutputProjectionWrapper(RNNCell):
    """`OutputProjectionWrapper(cell, output_size, activation=None)`: the cell's output times
    `kernel` (cell.output_size, output_size) plus `bias` (zeros), under
    `output_projection_wrapper/` (the cell's own variables below it), as contrib's."""
    _base_name = "output_projection_wrapper"

    def __init__(self, cell, output_size, activation=None, reuse=None):
        super().__init__()
        if int(output_size) < 1:
            raise located(f"Parameter output_size must be > 0: {output_size}.", ValueError)
        self.cell, self._size, self.activation = cell, int(output_size), activation

    state_size = property(lambda self: self.cell.state_size)
    output_size = property(lambda self: self._size)

    def zero_state(self, batch_size, dtype):
        return self.cell.zero_state(batch_size, dtype)

    def build(self, depth, dtype):
        self.cell.build_with_depth(depth, dtype)
        self.kernel = get_variable("kernel", [self.cell.output_size, self._size], dtype=dtype)
        self.bias = get_variable("bias", [self._size], dtype=dtype,
                                 initializer=zeros_initializer())

    def call(self, inputs, state):
        out, new = self.cell(inputs, state)
        out = ops.matmul(out, self.kernel) + self.bias
        return (out if self.activation is None else self.activation(out)), new


class ResidualWrapper(CellWrapper):
    """`ResidualWrapper(cell, residual_fn=None)`: the output is `residual_fn(inputs, output)`,
    by default inputs + output (their shapes must agree); the state is the cell's. No
    variables or scope of its own, as TF 1.15's wrappers."""

    def __init__(self, cell, residual_fn=None):
        super().__init__()
        self.cell, self._fn = cell, residual_fn

    def __call__(self, inputs, state, scope=None):
        out, new = self.cell(inputs, state, scope)
        if self._fn is not None:
            return self._fn(inputs, out), new
        if tuple(inputs.shape[1:]) != tuple(out.shape[1:]):
            raise located(f"ResidualWrapper: the inputs {fmt_shape(inputs.spec)} and the "
                          f"cell's outputs {fmt_shape(out.spec)} must have the same shape to "
                          f"be added", ValueError)
        return inputs + out, new

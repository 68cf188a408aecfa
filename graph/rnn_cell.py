"""TF1's RNN cells (`tf.nn.rnn_cell`, `tf.contrib.rnn`), composites of existing ops.

A cell makes its variables with `get_variable` the first time it is built, under the
enclosing variable scope plus its own name (`rnn/basic_lstm_cell/kernel`), as TF1 names
them; later calls reuse them. Gates are TF's: one kernel over [inputs, h], split i, j, f,
o for the LSTMs (forget_bias added to f), r, u for the GRU.

>>> from dualgrad import graph
>>> x = graph.placeholder(graph.float32, (None, 3))
>>> cell = graph.nn.rnn_cell.BasicLSTMCell(4)
>>> out, state = cell(x, cell.zero_state(2, graph.float32))
>>> [v.name for v in graph.trainable_variables()]
['basic_lstm_cell/kernel:0', 'basic_lstm_cell/bias:0']
"""
from __future__ import annotations

import collections

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import located
from dualgrad.ops.core import fmt_shape

from .array_ops import zeros
from .core import Tensor, get_default_graph
from .nn_dropout import dropout
from .dtypes import as_dtype
from .init_ops import constant_initializer, zeros_initializer
from .variable_scope import get_variable, variable_scope

__all__ = ["RNNCell", "BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell", "MultiRNNCell",
           "DropoutWrapper", "LSTMStateTuple"]

LSTMStateTuple = collections.namedtuple("LSTMStateTuple", ("c", "h"))


def _flat(state):
    return [s for part in state for s in _flat(part)] if isinstance(state, tuple) else [state]


class RNNCell:
    """Base: `state_size`, `output_size`, `zero_state(batch_size, dtype)`, and
    `cell(inputs, state) -> (output, new_state)`; `build(input_depth)` makes the variables."""
    _base_name = "rnn_cell"

    def __init__(self, name=None, dtype=None):
        self.name, self.dtype, self.built = name, dtype, False

    def _ensure_built(self, inputs):
        depth = inputs.shape[-1] if inputs.ndim is not None else None
        if depth is None:
            raise located(f"{type(self).__name__}: the last dim of the inputs "
                          f"{fmt_shape(inputs.spec)} must be known to create the weights")
        self.build_with_depth(depth, inputs.dtype)

    def build_with_depth(self, depth, dtype):
        """Make the variables for inputs of `depth` features (what a first call does) under
        the enclosing variable scope plus the cell's name; dynamic_rnn calls it before its
        loop, since variables are made outside loop bodies."""
        if self.built:
            return
        with variable_scope(self.name, default_name=self._base_name):
            self.build(int(depth), np.dtype(dtype))
        self.built = True

    def __call__(self, inputs, state, scope=None):
        if scope is not None and not self.built:
            with variable_scope(scope):
                self._ensure_built(inputs)
        self._ensure_built(inputs)
        with get_default_graph().name_scope(self.name or self._base_name):
            return self.call(inputs, state)

    def zero_state(self, batch_size, dtype):
        return _zeros(self.state_size, batch_size, as_dtype(dtype))


def _zeros(size, batch, dtype):
    if isinstance(size, tuple):
        return type(size)(*[_zeros(s, batch, dtype) for s in size]) \
            if hasattr(size, "_fields") else tuple(_zeros(s, batch, dtype) for s in size)
    return zeros([batch, size] if isinstance(batch, Tensor) else (int(batch), size), dtype)


def _linear(x, h, kernel, bias):
    return ops.matmul(ops.concat(x, h, axis=1), kernel) + bias


def _act(activation):
    return ops.tanh if activation is None else activation


class BasicRNNCell(RNNCell):
    """h' = activation([x, h] @ kernel + bias); the output is h'."""
    _base_name = "basic_rnn_cell"

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None):
        super().__init__(name, dtype)
        self.num_units, self.activation = int(num_units), activation

    state_size = property(lambda self: self.num_units)
    output_size = state_size

    def build(self, depth, dtype):
        n = self.num_units
        self.kernel = get_variable("kernel", [depth + n, n], dtype=dtype)
        self.bias = get_variable("bias", [n], dtype=dtype, initializer=zeros_initializer())

    def call(self, inputs, state):
        h = _act(self.activation)(_linear(inputs, state, self.kernel, self.bias))
        return h, h


class _LSTM(RNNCell):
    """The LSTM both LSTMCell and BasicLSTMCell are (siblings in TF): gates i, j, f, o from
    [x, h]; c' = sigmoid(f + forget_bias) * c + sigmoid(i) * activation(j);
    h' = sigmoid(o) * activation(c'). Optional peepholes, cell_clip, a projection num_proj
    (with proj_clip)."""

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None,
                 num_proj=None, proj_clip=None, num_unit_shards=None, num_proj_shards=None,
                 forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None, name=None,
                 dtype=None):
        super().__init__(name, dtype)
        if num_unit_shards is not None or num_proj_shards is not None:
            raise NotImplementedError("LSTMCell: sharded weights are not supported")
        self.num_units, self.use_peepholes, self.cell_clip = int(num_units), use_peepholes, \
            cell_clip
        self.initializer, self.num_proj, self.proj_clip = initializer, num_proj, proj_clip
        self.forget_bias, self.state_is_tuple = float(forget_bias), state_is_tuple
        self.activation = activation

    @property
    def state_size(self):
        h = self.num_proj or self.num_units
        return LSTMStateTuple(self.num_units, h) if self.state_is_tuple else self.num_units + h

    @property
    def output_size(self):
        return self.num_proj or self.num_units

    def build(self, depth, dtype):
        n, h = self.num_units, self.num_proj or self.num_units
        self.kernel = get_variable("kernel", [depth + h, 4 * n], dtype=dtype,
                                   initializer=self.initializer)
        self.bias = get_variable("bias", [4 * n], dtype=dtype, initializer=zeros_initializer())
        if self.use_peepholes:
            self.peep = [get_variable(k, [n], dtype=dtype, initializer=self.initializer)
                         for k in ("w_f_diag", "w_i_diag", "w_o_diag")]
        if self.num_proj:
            with variable_scope("projection"):
                self.proj = get_variable("kernel", [n, self.num_proj], dtype=dtype,
                                         initializer=self.initializer)

    def _split_state(self, state):
        if self.state_is_tuple:
            return state
        n = self.num_units
        return ops.slice_(state, index=(slice(None), slice(0, n))), \
            ops.slice_(state, index=(slice(None), slice(n, None)))

    def call(self, inputs, state):
        c, h = self._split_state(state)
        act = _act(self.activation)
        i, j, f, o = ops.split(_linear(inputs, h, self.kernel, self.bias), self.num_units,
                               axis=1)
        if self.use_peepholes:
            wf, wi, wo = self.peep
            f, i = f + wf * c, i + wi * c
        c = ops.sigmoid(f + self.forget_bias) * c + ops.sigmoid(i) * act(j)
        if self.cell_clip is not None:
            c = ops.minimum(ops.maximum(c, -self.cell_clip), self.cell_clip)
        if self.use_peepholes:
            o = o + self.peep[2] * c
        m = ops.sigmoid(o) * act(c)
        if self.num_proj:
            m = ops.matmul(m, self.proj)
            if self.proj_clip is not None:
                m = ops.minimum(ops.maximum(m, -self.proj_clip), self.proj_clip)
        new = LSTMStateTuple(c, m) if self.state_is_tuple else ops.concat(c, m, axis=1)
        return m, new


class LSTMCell(_LSTM):
    """TF1's LSTMCell (peepholes, cell_clip, num_proj and proj_clip as options)."""
    _base_name = "lstm_cell"


class BasicLSTMCell(_LSTM):
    """The LSTM without peepholes or projection (TF1's BasicLSTMCell)."""
    _base_name = "basic_lstm_cell"

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None,
                 reuse=None, name=None, dtype=None):
        super().__init__(num_units, forget_bias=forget_bias, state_is_tuple=state_is_tuple,
                         activation=activation, name=name, dtype=dtype)


class GRUCell(RNNCell):
    """r, u = sigmoid([x, h] @ gates/kernel + gates/bias) (bias 1.0 by default);
    c = activation([x, r * h] @ candidate/kernel + candidate/bias); h' = u * h + (1 - u) * c."""
    _base_name = "gru_cell"

    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None,
                 bias_initializer=None, name=None, dtype=None):
        super().__init__(name, dtype)
        self.num_units, self.activation = int(num_units), activation
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer

    state_size = property(lambda self: self.num_units)
    output_size = state_size

    def build(self, depth, dtype):
        n, k_init = self.num_units, self.kernel_initializer
        with variable_scope("gates"):
            self.gate_kernel = get_variable("kernel", [depth + n, 2 * n], dtype=dtype,
                                            initializer=k_init)
            self.gate_bias = get_variable("bias", [2 * n], dtype=dtype, initializer=(
                self.bias_initializer or constant_initializer(1.0)))
        with variable_scope("candidate"):
            self.cand_kernel = get_variable("kernel", [depth + n, n], dtype=dtype,
                                            initializer=k_init)
            self.cand_bias = get_variable("bias", [n], dtype=dtype, initializer=(
                self.bias_initializer or zeros_initializer()))

    def call(self, inputs, state):
        r, u = ops.split(ops.sigmoid(_linear(inputs, state, self.gate_kernel, self.gate_bias)),
                         self.num_units, axis=1)
        c = _act(self.activation)(_linear(inputs, r * state, self.cand_kernel, self.cand_bias))
        h = u * state + (1.0 - u) * c
        return h, h


class MultiRNNCell(RNNCell):
    """Cells stacked: each one's output is the next one's input; the state is a tuple."""
    _base_name = "multi_rnn_cell"

    def __init__(self, cells, state_is_tuple=True):
        super().__init__()
        if not state_is_tuple:
            raise NotImplementedError("MultiRNNCell: only state_is_tuple=True is supported")
        self.cells = list(cells)

    state_size = property(lambda self: tuple(c.state_size for c in self.cells))
    output_size = property(lambda self: self.cells[-1].output_size)

    def build(self, depth, dtype):
        for k, cell in enumerate(self.cells):
            with variable_scope(f"cell_{k}"):
                cell.build_with_depth(depth, dtype)
            depth = cell.output_size

    def call(self, inputs, state):
        new = []
        for k, (cell, s) in enumerate(zip(self.cells, state)):
            with get_default_graph().name_scope(f"cell_{k}"):
                inputs, s = cell(inputs, s)
            new.append(s)
        return inputs, tuple(new)


class CellWrapper(RNNCell):
    """A cell around another (`self.cell`): its sizes, zero state and building are the inner
    cell's; no variables or scope of its own."""
    state_size = property(lambda self: self.cell.state_size)
    output_size = property(lambda self: self.cell.output_size)

    def zero_state(self, batch_size, dtype):
        return self.cell.zero_state(batch_size, dtype)

    def _ensure_built(self, inputs):
        self.cell._ensure_built(inputs)
        self.built = True

    def build_with_depth(self, depth, dtype):
        self.cell.build_with_depth(depth, dtype)
        self.built = True


class DropoutWrapper(CellWrapper):
    """Dropout on a cell's inputs, outputs and state (not an LSTM's c), keep probabilities
    as floats or scalar tensors, as tf.nn.rnn_cell.DropoutWrapper (not variational)."""

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
                 variational_recurrent=False, input_size=None, dtype=None, seed=None,
                 dropout_state_filter_visitor=None):
        super().__init__()
        if variational_recurrent or dropout_state_filter_visitor is not None:
            raise NotImplementedError("DropoutWrapper: variational_recurrent and "
                                      "dropout_state_filter_visitor are not supported")
        self.cell, self.seed = cell, seed
        self.keep = (input_keep_prob, output_keep_prob, state_keep_prob)

    def _drop(self, x, keep):
        if not isinstance(keep, Tensor) and float(keep) == 1.0:
            return x
        return dropout(x, keep, seed=self.seed)

    def __call__(self, inputs, state, scope=None):
        out, new = self.cell(self._drop(inputs, self.keep[0]), state, scope)
        out = self._drop(out, self.keep[1])
        if isinstance(new, LSTMStateTuple):
            new = LSTMStateTuple(new.c, self._drop(new.h, self.keep[2]))
        elif isinstance(new, Tensor):
            new = self._drop(new, self.keep[2])
        return out, new


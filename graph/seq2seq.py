"""TF1's `tf.contrib.seq2seq` decoding with attention: `BahdanauAttention`, `LuongAttention`,
`AttentionWrapper` (with `AttentionWrapperState`), the `TrainingHelper` and
`GreedyEmbeddingHelper`, `BasicDecoder` and `dynamic_decode`, with TF 1.15's equations.

An attention mechanism keeps `values`, the memory with steps past `memory_sequence_length`
zeroed, and `keys = values @ memory_layer/kernel`. For a query q (the cell's output):

- Bahdanau: `score[t] = sum(v * tanh(keys[t] + q @ query_layer/kernel))`; with normalize,
  `v` becomes `g * v / |v|` (g starts at sqrt(1 / num_units)) and a bias b is added in the
  tanh.
- Luong: `score[t] = keys[t] . q` (times a scalar g, starting at 1, with scale).

Scores past a memory's length are -inf (score_mask_value), the alignments are their softmax,
the context `sum_t alignments[t] * values[t]`, and the attention `[output, context] @
attention_layer/kernel` (or the context itself without attention_layer_size). The wrapper
feeds `[inputs, previous attention]` to its cell. With `alignment_history=True` the state's
`alignment_history.stack()` gives every step's alignments, (time, batch, memory_time), as
TF's TensorArray did.

`dynamic_decode` runs `decoder.step` in a while_loop until every sequence is finished (or
`maximum_iterations`): (outputs batch-major unless output_time_major, final state, lengths).
Variables are made before the loop, under `decoder/` as in TF (`decoder/attention_wrapper/
basic_lstm_cell/kernel`, `decoder/attention_wrapper/bahdanau_attention/attention_v`,
`decoder/dense/kernel`); the memory layer under the scope where the mechanism is made.
`BeamSearchDecoder` is in beam_search.py. Not provided: several mechanisms in one wrapper,
`attention_layer` objects, monotonic attention and the scheduled-sampling helpers.
"""
from __future__ import annotations

import collections
import math

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import Spec, fmt_shape, located

from .array_ops import shape as shape_of
from .array_ops import IDENTITY, zeros
from .augment import multinomial
from .control_flow import while_loop_stacked
from .core import Tensor, constant, convert_to_tensor
from .init_ops import constant_initializer, ones_initializer, zeros_initializer
from .math_ops import reduce_all
from .nn import embedding_lookup
from .rnn import _flatten, _keep_where, _pack
from .rnn_cell import RNNCell
from .select_ops import sequence_mask
from .variable_scope import get_variable, variable_scope

__all__ = ["BahdanauAttention", "LuongAttention", "AttentionWrapper", "AttentionWrapperState",
           "TrainingHelper", "GreedyEmbeddingHelper", "SampleEmbeddingHelper", "BasicDecoder",
           "BasicDecoderOutput", "Decoder", "Helper", "dynamic_decode"]


def _dim(x, axis):
    d = x.shape[axis]
    return d if d is not None else ops.reshape(ops.slice_(shape_of(x), index=(
        slice(axis % x.ndim, axis % x.ndim + 1),)), ())


def _rows(cond, x):
    """`cond` (batch,) broadcast over x's other dims, for a per-example where."""
    for _ in range(x.ndim - 1):
        cond = ops.expand_dims(cond, axis=-1)
    return cond


# -- attention mechanisms ----------------------------------------------------------------------
class _AttentionMechanism:
    _base_name = "attention"

    def __init__(self, num_units, memory, memory_sequence_length, probability_fn,
                 score_mask_value, dtype, name):
        if not isinstance(memory, Tensor) or memory.ndim != 3 or memory.shape[2] is None:
            raise located(f"{type(self).__name__}: memory must be a (batch, time, depth) "
                          f"tensor with a known depth, got "
                          f"{fmt_shape(memory.spec) if isinstance(memory, Tensor) else memory}",
                          ValueError)
        self._num_units, self._name, self.built = int(num_units), name, False
        self.dtype = np.dtype(dtype or memory.dtype)
        self._probability_fn = probability_fn or (lambda score: ops.softmax(score, axis=-1))
        self._mask_value = -np.inf if score_mask_value is None else score_mask_value
        self._mask = None
        values = memory
        if memory_sequence_length is not None:
            self._mask = sequence_mask(memory_sequence_length, maxlen=_dim(memory, 1))
            values = memory * ops.cast(ops.expand_dims(self._mask, axis=-1), memory.dtype)
        self.values = values
        with variable_scope(None, default_name="memory_layer"):   # NOTE: then memory_layer_1
            kernel = get_variable("kernel", [memory.shape[2], self._num_units],
                                  dtype=self.dtype)
        self.keys = ops.matmul(values, kernel)
        self.batch_size, self.alignments_size = _dim(memory, 0), _dim(memory, 1)

    def build(self, query_depth, dtype):
        """Make the query-side variables (the wrapper does it before any loop)."""
        if not self.built:
            with variable_scope(None, default_name=self._base_name):
                self._build(int(query_depth))
            self.built = True

    def __call__(self, query, state):
        self.build(query.shape[-1], query.dtype)
        score = self._score(query)
        if self._mask is not None:
            score = ops.where(self._mask, score, np.asarray(self._mask_value, score.dtype))
        alignments = self._probability_fn(score)
        return alignments, alignments

    def initial_alignments(self, batch_size, dtype):
        return zeros([batch_size, self.alignments_size], dtype)

    def initial_state(self, batch_size, dtype):
        return self.initial_alignments(batch_size, dtype)


class BahdanauAttention(_AttentionMechanism):
    """`BahdanauAttention(num_units, memory, memory_sequence_length=None, normalize=False,
    probability_fn=None, score_mask_value=None, dtype=None, name='BahdanauAttention')`:
    additive attention (Bahdanau et al. 2015; normalize: Salimans and Kingma 2016)."""
    _base_name = "bahdanau_attention"

    def __init__(self, num_units, memory, memory_sequence_length=None, normalize=False,
                 probability_fn=None, score_mask_value=None, dtype=None,
                 custom_key_value_fn=None, name="BahdanauAttention"):
        if custom_key_value_fn is not None:
            raise located("BahdanauAttention(custom_key_value_fn=...) is not supported",
                          NotImplementedError)
        self._normalize = bool(normalize)
        super().__init__(num_units, memory, memory_sequence_length, probability_fn,
                         score_mask_value, dtype, name)

    def _build(self, depth):
        n, dt = self._num_units, self.dtype
        with variable_scope("query_layer"):
            self._query_kernel = get_variable("kernel", [depth, n], dtype=dt)
        self._v = get_variable("attention_v", [n], dtype=dt)
        if self._normalize:
            self._g = get_variable("attention_g", [], dtype=dt,
                                   initializer=constant_initializer(math.sqrt(1.0 / n)))
            self._b = get_variable("attention_b", [n], dtype=dt,
                                   initializer=zeros_initializer())

    def _score(self, query):
        q = ops.expand_dims(ops.matmul(query, self._query_kernel), axis=1)   # (B, 1, U)
        v = self._v
        if self._normalize:
            v = self._g * v * ops.rsqrt(ops.sum(ops.square(v)))
            return ops.sum(v * ops.tanh(self.keys + q + self._b), axis=2)
        return ops.sum(v * ops.tanh(self.keys + q), axis=2)


class LuongAttention(_AttentionMechanism):
    """`LuongAttention(num_units, memory, memory_sequence_length=None, scale=False,
    probability_fn=None, score_mask_value=None, dtype=None, name='LuongAttention')`:
    multiplicative attention (Luong et al. 2015); the query's depth must be num_units."""
    _base_name = "luong_attention"

    def __init__(self, num_units, memory, memory_sequence_length=None, scale=False,
                 probability_fn=None, score_mask_value=None, dtype=None,
                 custom_key_value_fn=None, name="LuongAttention"):
        if custom_key_value_fn is not None:
            raise located("LuongAttention(custom_key_value_fn=...) is not supported",
                          NotImplementedError)
        self._scale = bool(scale)
        super().__init__(num_units, memory, memory_sequence_length, probability_fn,
                         score_mask_value, dtype, name)

    def _build(self, depth):
        if depth != self._num_units:
            raise located(f"Incompatible or unknown inner dimensions between query and keys. "
                          f"Query (depth {depth}) has units: {depth}. Keys have units: "
                          f"{self._num_units}. Perhaps you need to set num_units to the "
                          f"keys' dimension ({self._num_units})?", ValueError)
        if self._scale:
            self._g = get_variable("attention_g", [], dtype=self.dtype,
                                   initializer=ones_initializer())

    def _score(self, query):
        score = ops.squeeze(ops.matmul(ops.expand_dims(query, axis=1),
                                       ops.transpose(self.keys, axes=(0, 2, 1))), axis=1)
        return self._g * score if self._scale else score


# -- the wrapper -------------------------------------------------------------------------------
class AttentionWrapperState(collections.namedtuple("AttentionWrapperState", (
        "cell_state", "attention", "time", "alignments", "alignment_history",
        "attention_state"))):
    """The AttentionWrapper's state; `clone(cell_state=...)` replaces fields (the usual way
    to start a decoder from the encoder's final state)."""

    def clone(self, **kwargs):
        return self._replace(**kwargs)


class AlignmentHistory(collections.namedtuple("AlignmentHistory", ("stacked",))):
    """The alignments of every step so far, which TF kept in a TensorArray: `stack()` is
    (time, batch, memory_time). Like a TensorArray, it is not held back when a sequence
    ends (in dynamic_rnn, dynamic_decode)."""
    passes_through = True

    def stack(self, name=None):
        return self.stacked


def _open_time(x):
    """x with its first dim unknown in the static shape, so a loop may grow it."""
    spec = Spec((None,) + tuple(x.shape[1:]), x.dtype)
    return x.graph.create_node(IDENTITY, (x,), {}, [spec], "alignment_history").outputs[0]


class AttentionWrapper(RNNCell):
    """`AttentionWrapper(cell, attention_mechanism, attention_layer_size=None,
    alignment_history=False, cell_input_fn=None, output_attention=True,
    initial_cell_state=None, name=None)`: the cell with attention over a memory; its state is
    an AttentionWrapperState, its output the attention (or, output_attention=False, the
    cell's output)."""
    _base_name = "attention_wrapper"

    def __init__(self, cell, attention_mechanism, attention_layer_size=None,
                 alignment_history=False, cell_input_fn=None, output_attention=True,
                 initial_cell_state=None, name=None, attention_layer=None, attention_fn=None):
        super().__init__(name)
        if isinstance(attention_mechanism, (list, tuple)) or \
                isinstance(attention_layer_size, (list, tuple)):
            raise located("AttentionWrapper: several attention mechanisms in one wrapper are "
                          "not supported; give one mechanism", NotImplementedError)
        if not isinstance(attention_mechanism, _AttentionMechanism):
            raise located(f"attention_mechanism must be an AttentionMechanism or list of "
                          f"multiple AttentionMechanism instances, saw type: "
                          f"{type(attention_mechanism).__name__}", TypeError)
        if attention_layer is not None or attention_fn is not None:
            raise located("AttentionWrapper(attention_layer=..., attention_fn=...) is not "
                          "supported; use attention_layer_size", NotImplementedError)
        if cell_input_fn is not None and not callable(cell_input_fn):
            raise located(f"cell_input_fn must be callable, saw type: "
                          f"{type(cell_input_fn).__name__}", TypeError)
        self._cell, self._mech = cell, attention_mechanism
        self._layer_size = None if attention_layer_size is None else int(attention_layer_size)
        self._alignment_history, self._output_attention = bool(alignment_history), \
            bool(output_attention)
        self._cell_input_fn = cell_input_fn or (
            lambda inputs, attention: ops.concat(inputs, attention, axis=-1))
        self._initial_cell_state = initial_cell_state

    @property
    def _attention_size(self):
        return self._layer_size or self._mech.values.shape[-1]

    @property
    def output_size(self):
        return self._attention_size if self._output_attention else self._cell.output_size

    @property
    def state_size(self):
        return AttentionWrapperState(
            cell_state=self._cell.state_size, attention=self._attention_size, time=(),
            alignments=self._mech.alignments_size,
            alignment_history=self._mech.alignments_size if self._alignment_history else (),
            attention_state=self._mech.alignments_size)

    def build(self, depth, dtype):
        self._cell.build_with_depth(depth + self._attention_size, dtype)
        self._mech.build(self._cell.output_size, dtype)
        if self._layer_size is not None:
            with variable_scope("attention_layer"):
                self._layer_kernel = get_variable(
                    "kernel", [self._cell.output_size + self._mech.values.shape[-1],
                               self._layer_size], dtype=dtype)

    def zero_state(self, batch_size, dtype):
        cell_state = self._initial_cell_state if self._initial_cell_state is not None \
            else self._cell.zero_state(batch_size, dtype)
        alignments = self._mech.initial_alignments(batch_size, dtype)
        history = ()
        if self._alignment_history:
            empty = ops.slice_(ops.expand_dims(alignments, axis=0), index=(slice(0, 0),))
            history = AlignmentHistory(_open_time(empty))
        return AttentionWrapperState(
            cell_state=cell_state, attention=zeros([batch_size, self._attention_size], dtype),
            time=constant(np.int32(0), name="time"), alignments=alignments,
            alignment_history=history,
            attention_state=self._mech.initial_state(batch_size, dtype))

    def call(self, inputs, state):
        if not isinstance(state, AttentionWrapperState):
            raise located(f"Expected state to be instance of AttentionWrapperState. Received "
                          f"type {type(state).__name__} instead.", TypeError)
        cell_output, next_cell_state = self._cell(
            self._cell_input_fn(inputs, state.attention), state.cell_state)
        alignments, next_attention_state = self._mech(cell_output, state.attention_state)
        context = ops.squeeze(ops.matmul(ops.expand_dims(alignments, axis=1),
                                         self._mech.values), axis=1)
        attention = context if self._layer_size is None else ops.matmul(
            ops.concat(cell_output, context, axis=1), self._layer_kernel)
        history = ()
        if self._alignment_history:
            history = AlignmentHistory(ops.concat(state.alignment_history.stacked,
                                                  ops.expand_dims(alignments, axis=0), axis=0))
        next_state = AttentionWrapperState(
            time=state.time + 1, cell_state=next_cell_state, attention=attention,
            alignments=alignments, alignment_history=history,
            attention_state=next_attention_state)
        return (attention if self._output_attention else cell_output), next_state


# -- helpers -----------------------------------------------------------------------------------
class Helper:
    """What a BasicDecoder asks for its inputs: `initialize()` -> (finished, inputs),
    `sample(time, outputs, state)` -> ids, `next_inputs(time, outputs, state, sample_ids)`
    -> (finished, inputs, state)."""
    sample_ids_shape, sample_ids_dtype = (), np.dtype(np.int32)


class TrainingHelper(Helper):
    """`TrainingHelper(inputs, sequence_length, time_major=False)`: teacher forcing, the
    decoder's input at step t is inputs[:, t]; a sequence is finished at its length."""

    def __init__(self, inputs, sequence_length, time_major=False, name=None):
        inputs = convert_to_tensor(inputs)
        if inputs.ndim is None or inputs.ndim < 3:
            raise located(f"TrainingHelper: inputs must be (batch, time, depth), got "
                          f"{fmt_shape(inputs.spec)}", ValueError)
        self._inputs = inputs if time_major else ops.transpose(
            inputs, axes=(1, 0) + tuple(range(2, inputs.ndim)))
        self._lengths = ops.cast(convert_to_tensor(sequence_length), np.int32)
        if self._lengths.ndim != 1:
            raise located(f"Expected sequence_length to be a vector, but received shape: "
                          f"{fmt_shape(self._lengths.spec)}", ValueError)
        self._steps = _dim(self._inputs, 0)
        self._zero = ops.zeros_like(ops.take(self._inputs, np.int32(0), axis=0))

    batch_size = property(lambda self: _dim(self._lengths, 0))
    inputs = property(lambda self: self._inputs)
    sequence_length = property(lambda self: self._lengths)

    def _read(self, time, finished):
        last = ops.minimum(time, self._steps - 1)    # NOTE: TF's cond reads no further
        x = ops.take(self._inputs, last, axis=0)
        return ops.where(reduce_all(finished), self._zero, x)

    def initialize(self, name=None):
        finished = ops.ge(0, self._lengths)
        return finished, self._read(np.int32(0), finished)

    def sample(self, time, outputs, state, name=None):
        return ops.cast(ops.argmax(outputs, axis=-1, keepdims=False), np.int32)

    def next_inputs(self, time, outputs, state, sample_ids=None, name=None):
        finished = ops.ge(time + 1, self._lengths)
        return finished, self._read(time + 1, finished), state


class GreedyEmbeddingHelper(Helper):
    """`GreedyEmbeddingHelper(embedding, start_tokens, end_token)`: the next input is the
    embedding of the argmax of the outputs; a sequence is finished once it emits end_token."""

    def __init__(self, embedding, start_tokens, end_token):
        self._embed = embedding if callable(embedding) else (
            lambda ids: embedding_lookup(embedding, ids))
        self._start = ops.cast(convert_to_tensor(start_tokens), np.int32)
        self._end = ops.cast(convert_to_tensor(end_token), np.int32)
        if self._start.ndim != 1:
            raise located("start_tokens must be a vector", ValueError)
        if self._end.ndim != 0:
            raise located("end_token must be a scalar", ValueError)
        self._start_inputs = self._embed(self._start)

    batch_size = property(lambda self: _dim(self._start, 0))

    def initialize(self, name=None):
        return ops.cast(ops.zeros_like(self._start), np.bool_), self._start_inputs

    def sample(self, time, outputs, state, name=None):
        if not isinstance(outputs, Tensor):
            raise located(f"Expected outputs to be a single Tensor, got: {type(outputs)}",
                          TypeError)
        return ops.cast(ops.argmax(outputs, axis=-1, keepdims=False), np.int32)

    def next_inputs(self, time, outputs, state, sample_ids=None, name=None):
        finished = ops.eq(sample_ids, self._end)
        nxt = ops.where(reduce_all(finished), self._start_inputs, self._embed(sample_ids))
        return finished, nxt, state


class SampleEmbeddingHelper(GreedyEmbeddingHelper):
    """`SampleEmbeddingHelper(embedding, start_tokens, end_token, softmax_temperature=None,
    seed=None)`: as GreedyEmbeddingHelper, but the ids are drawn from softmax(outputs /
    softmax_temperature) instead of taken by argmax."""

    def __init__(self, embedding, start_tokens, end_token, softmax_temperature=None,
                 seed=None):
        super().__init__(embedding, start_tokens, end_token)
        self._temperature, self._seed = softmax_temperature, seed

    def sample(self, time, outputs, state, name=None):
        if not isinstance(outputs, Tensor):
            raise located(f"Expected outputs to be a single Tensor, got: {type(outputs)}",
                          TypeError)
        logits = outputs if self._temperature is None else outputs / self._temperature
        return ops.reshape(multinomial(logits, 1, seed=self._seed, output_dtype=np.int32),
                           (-1,))


# -- decoders ----------------------------------------------------------------------------------
class BasicDecoderOutput(collections.namedtuple("BasicDecoderOutput",
                                                ("rnn_output", "sample_id"))):
    pass


class Decoder:
    """A decoder: `initialize()`, `step(time, inputs, state)`, `output_dtype`, and
    optionally `finalize(outputs, final_state, sequence_lengths)`."""
    tracks_own_finished = False

    def finalize(self, outputs, final_state, sequence_lengths):
        raise NotImplementedError


class BasicDecoder(Decoder):
    """`BasicDecoder(cell, helper, initial_state, output_layer=None)`: each step runs the
    cell, then output_layer (a `layers.Dense`), and asks the helper for the sample ids and
    the next inputs. Outputs are BasicDecoderOutput(rnn_output, sample_id)."""

    def __init__(self, cell, helper, initial_state, output_layer=None):
        if not isinstance(cell, RNNCell):
            raise located(f"cell must be an RNNCell, received: {type(cell)}", TypeError)
        if not isinstance(helper, Helper):
            raise located(f"helper must be a Helper, received: {type(helper)}", TypeError)
        if output_layer is not None and not callable(output_layer):
            raise located(f"output_layer must be a Layer, received: {type(output_layer)}",
                          TypeError)
        self._cell, self._helper, self._initial_state = cell, helper, initial_state
        self._output_layer = output_layer

    batch_size = property(lambda self: self._helper.batch_size)

    @property
    def output_size(self):
        units = self._output_layer.units if self._output_layer is not None \
            else self._cell.output_size
        return BasicDecoderOutput(rnn_output=units, sample_id=self._helper.sample_ids_shape)

    @property
    def output_dtype(self):
        return BasicDecoderOutput(rnn_output=self._dtype, sample_id=self._helper.sample_ids_dtype)

    def initialize(self, name=None):
        finished, inputs = self._helper.initialize()
        return finished, inputs, self._initial_state

    def build(self, inputs):
        """Make the variables before dynamic_decode's loop (no variable is made in one)."""
        self._dtype = np.dtype(inputs.dtype)
        self._cell.build_with_depth(inputs.shape[-1], inputs.dtype)
        if self._output_layer is not None and not getattr(self._output_layer, "built", True):
            self._output_layer(zeros([1, self._cell.output_size], inputs.dtype))

    def step(self, time, inputs, state, name=None):
        outputs, cell_state = self._cell(inputs, state)
        if self._output_layer is not None:
            outputs = self._output_layer(outputs)
        ids = self._helper.sample(time=time, outputs=outputs, state=cell_state)
        finished, next_inputs, next_state = self._helper.next_inputs(
            time=time, outputs=outputs, state=cell_state, sample_ids=ids)
        return BasicDecoderOutput(outputs, ids), next_state, next_inputs, finished


def dynamic_decode(decoder, output_time_major=False, impute_finished=False,
                   maximum_iterations=None, parallel_iterations=32, swap_memory=False,
                   scope=None):
    """Decode until every sequence is finished or after maximum_iterations steps:
    (final_outputs, final_state, final_sequence_lengths)."""
    if not isinstance(decoder, Decoder):
        raise located(f"Expected decoder to be type Decoder, but saw: {type(decoder)}",
                      TypeError)
    with variable_scope(scope or "decoder"):
        finished, inputs, state = decoder.initialize()
        decoder.build(inputs)
        limit = None if maximum_iterations is None else ops.cast(
            convert_to_tensor(maximum_iterations), np.int32)
        if limit is not None:
            finished = ops.logical_or(finished, ops.ge(0, limit))
        lengths = ops.cast(ops.zeros_like(ops.cast(finished, np.int32)), np.int32)
        flat_state, flat_inputs = _flatten(state), _flatten(inputs)
        n_s, n_i = len(flat_state), len(flat_inputs)
        n_out = len(decoder.output_dtype)

        def body(t, *vs):
            old, fin, lens = _pack(state, vs[:n_s]), vs[-2], vs[-1]
            out, new, nxt, dec_fin = decoder.step(t, _pack(inputs, vs[n_s:n_s + n_i]), old)
            nxt_fin = dec_fin if decoder.tracks_own_finished else ops.logical_or(dec_fin, fin)
            lens = ops.where(ops.logical_not(fin), ops.cast(ops.zeros_like(lens), np.int32)
                             + (t + 1), lens)
            if limit is not None:
                nxt_fin = ops.logical_or(nxt_fin, ops.ge(t + 1, limit))
            outs = list(out)
            if impute_finished:
                outs = [ops.where(_rows(fin, o), ops.zeros_like(o), o) for o in outs]
                new = _keep_where(ops.expand_dims(ops.logical_not(fin), axis=1), new, old)
            return (t + 1, *_flatten(new), *_flatten(nxt), nxt_fin, lens, *outs)

        loop_vars = [constant(np.int32(0), name="time"), *flat_state, *flat_inputs, finished,
                     lengths]
        res = while_loop_stacked(lambda t, *vs: ops.logical_not(reduce_all(vs[-2])), body,
                                 loop_vars, n_out,
                                 shape_invariants=[tuple(v.shape) for v in loop_vars])
        final_state = _pack(state, res[1:1 + n_s])
        final_lengths = res[1 + n_s + n_i + 1]
        outputs = type(decoder.output_dtype)(*res[len(loop_vars):])
        try:
            outputs, final_state = decoder.finalize(outputs, final_state, final_lengths)
        except NotImplementedError:
            pass
        if not output_time_major:
            outputs = _batch_major(outputs)
        return outputs, final_state, final_lengths


def _batch_major(outputs):
    if isinstance(outputs, tuple):
        return type(outputs)(*[_batch_major(o) for o in outputs])
    return ops.transpose(outputs, axes=(1, 0) + tuple(range(2, outputs.ndim)))

"""`tf.contrib.seq2seq.BeamSearchDecoder` and `gather_tree`, with TF 1.15's rules.

Each example keeps `beam_width` hypotheses. A step runs the cell on every beam (batch and
beams merged), takes the log-softmax of the logits, and extends each unfinished beam by each
word: total = the beam's log prob + the word's; a finished beam may only add end_token, at no
cost. The score is total / ((5 + length) / 6) ** length_penalty_weight (GNMT's), plus with
coverage_penalty_weight the weight times sum over the memory of log(min(attention summed over
the steps, 1)) for finished beams (GNMT's coverage; steps never attended count as 1). The
`beam_width` best (beam, word) pairs of each example become the new beams, taking their
parents' cell state; at the first step only beam 0 is live. `finalize` follows the parents
back from the end (`gather_tree`): predicted_ids (batch, time, beam_width), best first.

Not provided: `reorder_tensor_arrays` for a cell state holding an alignment history
(AttentionWrapper's alignment_history=True raises NotImplementedError here).
"""
from __future__ import annotations

import collections

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import located

from .array_ops import zeros
from .control_flow import while_loop_stacked
from .core import constant, convert_to_tensor
from .math_ops import reduce_all
from .nn import embedding_lookup
from .rnn_cell import RNNCell
from .select_ops import top_k
from .seq2seq import AlignmentHistory, AttentionWrapperState, Decoder, _dim

__all__ = ["BeamSearchDecoder", "BeamSearchDecoderState", "BeamSearchDecoderOutput",
           "FinalBeamSearchDecoderOutput", "gather_tree"]


class BeamSearchDecoderState(collections.namedtuple("BeamSearchDecoderState", (
        "cell_state", "log_probs", "finished", "lengths", "accumulated_attention_probs"))):
    pass


class BeamSearchDecoderOutput(collections.namedtuple("BeamSearchDecoderOutput",
                                                     ("scores", "predicted_ids",
                                                      "parent_ids"))):
    pass


class FinalBeamSearchDecoderOutput(collections.namedtuple(
        "FinalBeamDecoderOutput", ("predicted_ids", "beam_search_decoder_output"))):
    pass


def _map(fn, state):
    """fn over every tensor of a nested state (namedtuples kept)."""
    if isinstance(state, tuple):
        parts = [_map(fn, s) for s in state]
        return type(state)(*parts) if hasattr(state, "_fields") else tuple(parts)
    return fn(state)


def _has_history(state):
    return isinstance(state, AlignmentHistory) or (
        isinstance(state, tuple) and any(_has_history(s) for s in state))


def _gather_beams(x, idx, width):
    """x[b, idx[b, k], ...] for x (batch, width, ...) and idx (batch, k)."""
    rest = tuple(x.shape[2:])
    flat = ops.reshape(x, (-1,) + rest)
    offset = (ops.cumsum(ops.ones_like(ops.slice_(idx, index=(slice(None), slice(0, 1)))),
                         axis=0) - 1) * width
    picked = ops.take(flat, ops.reshape(idx + offset, (-1,)), axis=0)
    return ops.reshape(picked, (-1, idx.shape[1]) + rest)


def gather_tree(step_ids, parent_ids, max_sequence_lengths, end_token):
    """The full beams, (time, batch, beam), from each step's ids and parent beams: followed
    back from step max_sequence_lengths[b] - 1; end_token at and after the first end_token
    and past the length (TF's GatherTree)."""
    step_ids, parent_ids = convert_to_tensor(step_ids), convert_to_tensor(parent_ids)
    lengths = ops.cast(convert_to_tensor(max_sequence_lengths), np.int32)
    end = ops.cast(convert_to_tensor(end_token), np.int32)
    width, steps = step_ids.shape[2], _dim(step_ids, 0)
    first = ops.take(step_ids, np.int32(0), axis=0)
    ident = ops.zeros_like(first) + np.arange(width, dtype=np.int32)

    def body(i, cur):
        t = steps - 1 - i
        live = ops.expand_dims(ops.lt(t, lengths), axis=1)
        ids = _gather_beams(ops.take(step_ids, t, axis=0), cur, width)
        parents = _gather_beams(ops.take(parent_ids, t, axis=0), cur, width)
        return i + 1, ops.where(live, parents, cur), ops.where(live, ids, end)

    res = while_loop_stacked(lambda i, cur: ops.lt(i, steps), body,
                             [constant(np.int32(0)), ident], 1,
                             shape_invariants=[(), tuple(ident.shape)])
    beams = ops.flip(res[-1], axis=0)
    is_end = ops.cast(ops.eq(beams, end), np.int32)
    seen = ops.cumsum(is_end, axis=0) - is_end
    return ops.where(ops.gt(seen, 0), end, beams)


class BeamSearchDecoder(Decoder):
    """`BeamSearchDecoder(cell, embedding, start_tokens, end_token, initial_state,
    beam_width, output_layer=None, length_penalty_weight=0.0, coverage_penalty_weight=0.0,
    reorder_tensor_arrays=True)`: initial_state has batch * beam_width rows
    (`contrib.seq2seq.tile_batch`), as the memory of an attention mechanism must."""
    tracks_own_finished = True

    def __init__(self, cell, embedding, start_tokens, end_token, initial_state, beam_width,
                 output_layer=None, length_penalty_weight=0.0, coverage_penalty_weight=0.0,
                 reorder_tensor_arrays=True):
        if not isinstance(cell, RNNCell):
            raise located(f"cell must be an RNNCell, received: {type(cell)}", TypeError)
        if output_layer is not None and not callable(output_layer):
            raise located(f"output_layer must be a Layer, received: {type(output_layer)}",
                          TypeError)
        if _has_history(initial_state):
            raise located("BeamSearchDecoder: an AttentionWrapper with alignment_history=True "
                          "is not supported (its history is not reordered by beam)",
                          NotImplementedError)
        self._cell, self._output_layer, self._width = cell, output_layer, int(beam_width)
        self._length_penalty = float(length_penalty_weight)
        self._coverage_penalty = float(coverage_penalty_weight)
        self._embed = embedding if callable(embedding) else (
            lambda ids: embedding_lookup(embedding, ids))
        start = ops.cast(convert_to_tensor(start_tokens), np.int32)
        self._end = ops.cast(convert_to_tensor(end_token), np.int32)
        if start.ndim != 1:
            raise located("start_tokens must be a vector", ValueError)
        if self._end.ndim != 0:
            raise located("end_token must be a scalar", ValueError)
        self._batch_size = _dim(start, 0)
        self._initial_cell_state = _map(self._split, initial_state)
        self._start_tokens = ops.tile(ops.expand_dims(start, axis=1), (1, self._width))
        self._start_inputs = self._embed(self._start_tokens)
        beam0 = ops.eq(ops.zeros_like(self._start_tokens) + np.arange(self._width,
                                                                      dtype=np.int32), 0)
        self._finished = ops.logical_not(beam0)

    batch_size = property(lambda self: self._batch_size)

    def _split(self, t):
        """(batch * beam, ...) -> (batch, beam, ...); a scalar (the wrapper's time) stays."""
        return t if t.ndim == 0 else ops.reshape(t, (-1, self._width) + tuple(t.shape[1:]))

    def _merge(self, t):
        return t if t.ndim == 0 else ops.reshape(t, (-1,) + tuple(t.shape[2:]))

    @property
    def output_dtype(self):
        return BeamSearchDecoderOutput(scores=self._dtype, predicted_ids=np.dtype(np.int32),
                                       parent_ids=np.dtype(np.int32))

    def build(self, inputs):
        """Make the variables before dynamic_decode's loop."""
        self._dtype = np.dtype(inputs.dtype)
        self._cell.build_with_depth(inputs.shape[-1], inputs.dtype)
        if self._output_layer is not None and not getattr(self._output_layer, "built", True):
            self._output_layer(zeros([1, self._cell.output_size], inputs.dtype))

    def initialize(self, name=None):
        dtype = _first(self._initial_cell_state).dtype
        beam0 = ops.logical_not(self._finished)
        log_probs = ops.where(beam0, np.asarray(0.0, dtype), np.asarray(-np.inf, dtype))
        probs = self._attention_probs(self._initial_cell_state)
        state = BeamSearchDecoderState(
            cell_state=self._initial_cell_state, log_probs=log_probs, finished=self._finished,
            lengths=ops.cast(ops.zeros_like(self._start_tokens), np.int64),
            accumulated_attention_probs=() if probs is None else probs)
        return self._finished, self._start_inputs, state

    def _attention_probs(self, cell_state):
        if self._coverage_penalty == 0.0:
            return None
        found = [s.alignments for s in ([cell_state] if isinstance(
            cell_state, AttentionWrapperState) else cell_state if isinstance(
            cell_state, tuple) else []) if isinstance(s, AttentionWrapperState)]
        if not found:
            raise located("coverage_penalty_weight must be 0.0 if no cell is attentional.",
                          ValueError)
        total = found[0]
        for p in found[1:]:
            total = total + p
        return total / float(len(found))

    def step(self, time, inputs, state, name=None):
        out, cell_state = self._cell(self._merge(inputs), _map(self._merge, state.cell_state))
        logits, cell_state = self._split(out), _map(self._split, cell_state)
        if self._output_layer is not None:
            logits = self._output_layer(logits)
        output, next_state = self._beam_step(logits, cell_state, state)
        finished = next_state.finished
        next_inputs = ops.where(reduce_all(finished), self._start_inputs,
                                self._embed(output.predicted_ids))
        return output, next_state, next_inputs, finished

    def _beam_step(self, logits, cell_state, state):
        width, vocab = self._width, logits.shape[-1]
        if vocab is None:
            raise located("BeamSearchDecoder: the logits' last dim (the vocabulary) must be "
                          "known", ValueError)
        done = state.finished
        words = np.arange(vocab, dtype=np.int32)
        is_end = ops.eq(words, self._end)                                  # (V,)
        step = ops.log_softmax(logits, axis=-1)
        lowest = np.asarray(np.finfo(step.dtype).min, step.dtype)
        only_end = ops.where(is_end, np.asarray(0.0, step.dtype), lowest)
        step = ops.where(ops.expand_dims(done, axis=2), only_end, step)
        total = ops.expand_dims(state.log_probs, axis=2) + step
        grow = ops.cast(ops.logical_and(ops.logical_not(is_end),
                                        ops.expand_dims(ops.logical_not(done), axis=2)),
                        np.int64)
        scores = total / self._penalty(grow + ops.expand_dims(state.lengths, axis=2),
                                       total.dtype)
        accumulated = None
        probs = self._attention_probs(cell_state)
        if probs is not None:
            accumulated = state.accumulated_attention_probs + probs * ops.cast(
                ops.expand_dims(ops.logical_not(done), axis=2), probs.dtype)
            scores = scores + self._coverage(accumulated, done, scores.dtype)
        best, index = top_k(ops.reshape(scores, (-1, width * vocab)), width)
        log_probs = ops.reshape(_gather_beams(ops.reshape(total, (-1, width * vocab, 1)),
                                              index, width * vocab), (-1, width))
        word_ids = ops.cast(index - ops.floordiv(index, vocab) * vocab, np.int32)
        beam_ids = ops.cast(ops.floordiv(index, vocab), np.int32)
        was_done = _gather_beams(done, beam_ids, width)
        lengths = _gather_beams(state.lengths, beam_ids, width) + ops.cast(
            ops.logical_not(was_done), np.int64)
        finished = ops.logical_or(was_done, ops.eq(word_ids, self._end))
        cell_state = _map(lambda t: t if t.ndim < 2 else _gather_beams(t, beam_ids, width),
                          cell_state)
        next_state = BeamSearchDecoderState(
            cell_state=cell_state, log_probs=log_probs, finished=finished, lengths=lengths,
            accumulated_attention_probs=() if accumulated is None
            else _gather_beams(accumulated, beam_ids, width))
        return BeamSearchDecoderOutput(best, word_ids, beam_ids), next_state

    def _penalty(self, lengths, dtype):
        if self._length_penalty == 0.0:
            return np.asarray(1.0, dtype)
        w = self._length_penalty
        return ops.cast((5.0 + ops.cast(lengths, np.float32)) ** w / (6.0 ** w), dtype)

    def _coverage(self, accumulated, done, dtype):
        probs = ops.where(ops.eq(accumulated, 0.0), ops.ones_like(accumulated), accumulated)
        penalty = ops.sum(ops.log(ops.minimum(probs, 1.0)), axis=2) * ops.cast(done, dtype)
        return ops.expand_dims(penalty * self._coverage_penalty, axis=2)

    def finalize(self, outputs, final_state, sequence_lengths):
        """predicted_ids followed back through the parents (gather_tree)."""
        longest = ops.cast(ops.max(final_state.lengths, axis=1), np.int32)
        ids = gather_tree(outputs.predicted_ids, outputs.parent_ids, longest, self._end)
        return FinalBeamSearchDecoderOutput(predicted_ids=ids,
                                            beam_search_decoder_output=outputs), final_state


def _first(state):
    while isinstance(state, tuple):
        state = next(s for s in state if not (isinstance(s, tuple) and not s))
    return state


"""`tf.contrib.legacy_seq2seq` (TF1's list-of-steps seq2seq, before contrib.seq2seq):
`rnn_decoder`, `sequence_loss_by_example`, `sequence_loss` and `model_with_buckets`, as TF
1.15 defines them. Inputs, targets and weights are Python lists with one (batch, ...) tensor
per step. Not provided: the models (`basic_rnn_seq2seq`, `embedding_rnn_seq2seq`,
`embedding_attention_seq2seq`, `attention_decoder`); contrib.seq2seq's AttentionWrapper and
BasicDecoder do what they did.
"""
from __future__ import annotations

from dualgrad import ops
from dualgrad.ops.core import located

from .array_ops import shape as shape_of
from .math_ops import add_n, reduce_sum
from .nn import sparse_softmax_cross_entropy_with_logits
from .variable_scope import get_variable_scope, variable_scope

__all__ = ["rnn_decoder", "sequence_loss_by_example", "sequence_loss", "model_with_buckets"]


def rnn_decoder(decoder_inputs, initial_state, cell, loop_function=None, scope=None):
    """(outputs, state): the cell over decoder_inputs from initial_state; with
    loop_function, each step after the first reads loop_function(previous output, i)
    instead of its input."""
    with variable_scope(scope or "rnn_decoder"):
        state, outputs, prev = initial_state, [], None
        for i, inp in enumerate(decoder_inputs):
            if loop_function is not None and prev is not None:
                with variable_scope("loop_function", reuse=True):
                    inp = loop_function(prev, i)
            if i > 0:
                get_variable_scope().reuse_variables()
            output, state = cell(inp, state)
            outputs.append(output)
            if loop_function is not None:
                prev = output
    return outputs, state


def sequence_loss_by_example(logits, targets, weights, average_across_timesteps=True,
                             softmax_loss_function=None, name=None):
    """(batch,): sum over the steps of weight * cross-entropy(target, logit), divided by
    the summed weights (+ 1e-12) when average_across_timesteps."""
    if len(targets) != len(logits) or len(weights) != len(logits):
        raise located(f"Lengths of logits, weights, and targets must be the same "
                      f"{len(logits)}, {len(weights)}, {len(targets)}.", ValueError)
    parts = []
    for logit, target, weight in zip(logits, targets, weights):
        if softmax_loss_function is None:
            cross = sparse_softmax_cross_entropy_with_logits(
                labels=ops.reshape(target, (-1,)), logits=logit)
        else:
            cross = softmax_loss_function(labels=target, logits=logit)
        parts.append(cross * weight)
    total = add_n(parts)
    if average_across_timesteps:
        total = total / (add_n(list(weights)) + 1e-12)
    return total


def sequence_loss(logits, targets, weights, average_across_timesteps=True,
                  average_across_batch=True, softmax_loss_function=None, name=None):
    """The sum over the batch of sequence_loss_by_example, divided by the batch size when
    average_across_batch."""
    cost = reduce_sum(sequence_loss_by_example(
        logits, targets, weights, average_across_timesteps=average_across_timesteps,
        softmax_loss_function=softmax_loss_function))
    if not average_across_batch:
        return cost
    batch = ops.reshape(ops.slice_(shape_of(targets[0]), index=(slice(0, 1),)), ())
    return cost / ops.cast(batch, cost.dtype)


def model_with_buckets(encoder_inputs, decoder_inputs, targets, weights, buckets, seq2seq,
                       softmax_loss_function=None, per_example_loss=False, name=None):
    """(outputs, losses), one of each per bucket (input size, output size): seq2seq on the
    first steps of the inputs, every bucket sharing the first bucket's variables."""
    for what, seq, k in (("encoder_inputs", encoder_inputs, 0), ("targets", targets, 1),
                         ("weights", weights, 1)):
        if len(seq) < buckets[-1][k]:
            raise located(f"Length of {what} ({len(seq)}) must be at least that of last "
                          f"bucket ({buckets[-1][k]}).", ValueError)
    losses, outputs = [], []
    for j, (n_in, n_out) in enumerate(buckets):
        with variable_scope(get_variable_scope(), reuse=True if j > 0 else None):
            bucket_outputs, _ = seq2seq(encoder_inputs[:n_in], decoder_inputs[:n_out])
            outputs.append(bucket_outputs)
            loss = sequence_loss_by_example if per_example_loss else sequence_loss
            losses.append(loss(bucket_outputs, targets[:n_out], weights[:n_out],
                               softmax_loss_function=softmax_loss_function))
    return outputs, losses

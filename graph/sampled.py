"""Sampled losses for large vocabularies, as TF1's `nn.nce_loss` and
`nn.sampled_softmax_loss`, with the log-uniform (Zipfian) candidate sampler TF uses by default
(`nn.log_uniform_candidate_sampler`): class k is drawn with probability
(log(k + 2) - log(k + 1)) / log(range_max + 1), `num_sampled` distinct classes per step, and
each logit is corrected by the log of its expected count, as TF's `_compute_sampled_logits`.
Draws come from dualgrad's generator (`set_random_seed` seeds it), not TF's stream.
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import Spec

from .core import _graph_of, _lift, graph_op
from .math_ops import (cast, concat, equal, expand_dims, gather, log, matmul, named, reduce_max,
                       reduce_sum, reshape, zeros_like, ones_like)

__all__ = ["nce_loss", "sampled_softmax_loss", "log_uniform_candidate_sampler"]


def _log_uniform_p(k, range_max):
    k = np.asarray(k, np.float64)
    return (np.log(k + 2.0) - np.log(k + 1.0)) / np.log(range_max + 1.0)


def _sampler_kernel(node):
    n, range_max, unique, seed = (node.attrs[k] for k in ("num_sampled", "range_max", "unique",
                                                          "seed"))

    def run(state, true_classes):
        rng = ops.generator() if seed is None else state.rngs.setdefault(
            node.name, np.random.default_rng(seed))
        picked, tries = [], 0
        seen = set()
        while len(picked) < n:
            # NOTE: inverse CDF of the log-uniform distribution, as TF's LogUniformSampler
            k = int(np.exp(rng.uniform() * np.log(range_max + 1.0))) - 1
            k = min(max(k, 0), range_max - 1)
            tries += 1
            if unique and k in seen:
                continue
            seen.add(k)
            picked.append(k)
        def expected(ids):
            p = _log_uniform_p(ids, range_max)
            c = -np.expm1(tries * np.log1p(-p)) if unique else n * p
            return c.astype(np.float32)
        sampled = np.asarray(picked, np.int64)
        return sampled, expected(true_classes), expected(sampled)
    return run, True


SAMPLER = graph_op("log_uniform_candidate_sampler", _sampler_kernel)


def log_uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                  seed=None, name=None):
    """(sampled_candidates, true_expected_count, sampled_expected_count), as TF's."""
    if unique and num_sampled > range_max:
        raise ValueError(f"log_uniform_candidate_sampler: cannot draw {num_sampled} distinct "
                         f"classes from {range_max}")
    g = _graph_of([true_classes])
    t = _lift(g, true_classes, [true_classes])
    attrs = {"num_sampled": int(num_sampled), "range_max": int(range_max),
             "unique": bool(unique), "seed": seed}
    specs = [Spec((num_sampled,), np.dtype(np.int64)), Spec(t.shape, np.dtype(np.float32)),
             Spec((num_sampled,), np.dtype(np.float32))]
    return g.create_node(SAMPLER, (t,), attrs, specs, name or "LogUniformCandidateSampler") \
        .outputs


def _sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes, num_true,
                    sampled_values, remove_accidental_hits):
    if isinstance(weights, (list, tuple)):
        if len(weights) != 1:
            raise NotImplementedError("sampled losses: partitioned weights (a list of several "
                                      "variables) are not supported")
        weights = weights[0]
    labels = cast(reshape(labels, [-1, num_true]), np.int64)
    if sampled_values is None:
        sampled_values = log_uniform_candidate_sampler(labels, num_true, num_sampled, True,
                                                       num_classes)
    sampled, true_expected, sampled_expected = sampled_values
    true_w = gather(weights, labels)                                     # (B, T, D)
    true_logits = reduce_sum(expand_dims(inputs, 1) * true_w, axis=2) + gather(biases, labels)
    sampled_logits = matmul(inputs, gather(weights, sampled), transpose_b=True) + \
        gather(biases, sampled)                                          # (B, S)
    if remove_accidental_hits:
        hit = reduce_max(cast(equal(expand_dims(labels, 2), reshape(sampled, [1, 1, -1])),
                              np.float32), axis=1)       # (B, S): 1 where a sample is a label
        sampled_logits = sampled_logits - 3.4028235e38 * hit
    true_logits = true_logits - log(true_expected)
    sampled_logits = sampled_logits - log(sampled_expected)
    logits = concat([true_logits, sampled_logits], 1)
    labels_out = concat([ones_like(true_logits) / float(num_true), zeros_like(sampled_logits)],
                        1)
    return logits, labels_out


@named
def nce_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
             sampled_values=None, remove_accidental_hits=False, partition_strategy="mod"):
    """Noise-contrastive estimation loss per example, shape (batch,)."""
    logits, labels_out = _sampled_logits(weights, biases, labels, inputs, num_sampled,
                                         num_classes, num_true, sampled_values,
                                         remove_accidental_hits)
    return reduce_sum(ops.binary_cross_entropy_with_logits(logits, labels_out, reduction="none"),
                      1)


@named
def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
                         sampled_values=None, remove_accidental_hits=True,
                         partition_strategy="mod", seed=None):
    """Softmax cross-entropy over the true and the sampled classes, shape (batch,)."""
    logits, labels_out = _sampled_logits(weights, biases, labels, inputs, num_sampled,
                                         num_classes, num_true, sampled_values,
                                         remove_accidental_hits)
    return ops.cross_entropy(logits, labels_out, reduction="none")

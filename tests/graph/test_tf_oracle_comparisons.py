"""The comparison models' graph style (comparisons/models/*_graph.py) trained under real
tf.compat.v1 and under dualgrad from the same initial weights, losses compared step by step.

One generic harness for every model in `common.TASKS`: the model module is built twice, once
as it is and once with its `graph` name (and `dualgrad.graph`, which `GraphTrainer.finish`
imports) pointing at `tf.compat.v1`, through `TF1`: tf.compat.v1 itself, plus TF's spelling of
the few names the models use that are dualgrad's own (each listed in TF1_SPELLING with why).
Weights are the models' own: constants fed to `Variable`s / initialisers, so both start from
the same point; data is the task's first batches in order.

Tolerance: rtol 1e-4 on every step's loss (float32 arithmetic in another order; a wrong
gradient or update moves a loss by far more within 2 steps). Cap: STEPS = 4 steps per model
and unroll, dualgrad unoptimised and optimised (5 models x 3 runs, about 20 s in all).
"""
import importlib
import sys
from unittest import mock

import numpy as np
import pytest

pytest.importorskip("tensorflow")

import dualgrad  # noqa: E402
from dualgrad.comparisons.models import common  # noqa: E402

from . import tf_oracle as O  # noqa: E402

STEPS = 4
RTOL = 1e-4
# model variants: (model, build options); the RNN also as TF1's while_loop unroll
VARIANTS = [(m, {}) for m in common.TASKS] + [("rnn", {"unroll": "while_loop"})]


class _Namespace:
    """`base` with some names replaced (a module seen with TF's spelling of a few names)."""

    def __init__(self, base, **replaced):
        self._base, self._replaced = base, replaced

    def __getattr__(self, name):
        return self._replaced[name] if name in self._replaced else getattr(self._base, name)


def _init(f):
    """A model's `init(shape, dtype)` as TF calls initialisers (with partition_info)."""
    return None if f is None else (lambda shape, dtype=None, partition_info=None:
                                   f(shape, dtype))


def _tf1(tf):
    """tf.compat.v1, with TF's spelling of the dualgrad-only names the models use."""
    v1 = tf.compat.v1

    def dense(x, units, kernel_initializer=None, bias_initializer=None, **kw):
        return v1.layers.dense(x, units, kernel_initializer=_init(kernel_initializer),
                               bias_initializer=_init(bias_initializer) or v1.zeros_initializer(),
                               **kw)

    def layer_norm(x, gamma, beta, epsilon=1e-5):
        mean, var = v1.nn.moments(x, axes=[-1], keep_dims=True)
        return (x - mean) * v1.rsqrt(var + epsilon) * gamma + beta

    nn = _Namespace(v1.nn, dense=dense, layer_norm=layer_norm, gelu=tf.nn.gelu)
    return _Namespace(v1, nn=nn,
                      Session=lambda graph=None, optimize=True: v1.Session(graph=graph))


# dualgrad names the models use and what stands for them in TF: each is a difference a TF1
# user porting the model would meet (checked by test_the_spelling_table_is_complete)
TF1_SPELLING = {
    "nn.dense": "dualgrad's name for tf.layers.dense (same variables and initialisers)",
    "nn.layer_norm": "dualgrad's own (TF1 has it only in tf.contrib.layers): written with "
                     "tf.nn.moments",
    "nn.gelu": "TF2's tf.nn.gelu: tf.compat.v1.nn has no gelu",
    "Session": "dualgrad's Session takes optimize=; TF's graph optimiser is not switchable",
}


def _losses(model, options, tf=None, optimize=True):
    mod = importlib.import_module(f"dualgrad.comparisons.models.{model}_graph")
    batches = common.TASKS[model]().batches(0)[:STEPS]
    weights = mod.initial_weights(0)
    if tf is None:
        trainer = mod.build(weights, optimize=optimize, **options)
        return [trainer.step(*b) for b in batches]
    adapter = _tf1(tf)
    with mock.patch.object(mod, "graph", adapter), \
            mock.patch.object(dualgrad, "graph", adapter), \
            mock.patch.dict(sys.modules, {"dualgrad.graph": adapter}):
        trainer = mod.build(weights, **options)
        return [trainer.step(*b) for b in batches]


@pytest.fixture(scope="module")
def tf():
    return O.load_tf()


@pytest.mark.parametrize("model,options", VARIANTS,
                         ids=[m + "".join(f"-{v}" for v in o.values()) for m, o in VARIANTS])
def test_model_trains_as_in_tf(tf, model, options):
    ref = _losses(model, options, tf)
    assert len(ref) == STEPS and ref[-1] < ref[0] * 1.5
    for optimize in (False, True):
        ours = _losses(model, options, optimize=optimize)
        np.testing.assert_allclose(ours, ref, rtol=RTOL,
                                   err_msg=f"{model} {options} optimize={optimize}")


def test_the_spelling_table_is_complete(tf):
    """Every name _tf1 replaces has its row, and each is really missing from (or different
    in) tf.compat.v1, so a TF that gains one shows here."""
    assert set(TF1_SPELLING) == {"nn.dense", "nn.layer_norm", "nn.gelu", "Session"}
    v1 = tf.compat.v1
    assert not hasattr(v1.nn, "dense") and not hasattr(v1.nn, "layer_norm")
    assert not hasattr(v1.nn, "gelu")

"""The four comparison models as exportable programs, from eager code and from TF1 graphs.

What `dualgrad export`, the export tests and the inference benchmark share: for a model
name, the eager function to hand `compiler.export` with its example inputs, and the TF1
trainer's placeholders, logits and session to hand `graph.onnx.export`.

The recurrent model's eager `forward` loops for `max(lengths)` steps, decided by Python at
each call; an exported program runs one fixed graph, so it comes in the two forms the graph
version has: `rnn` reads a mask (N, 8) and keeps each sequence's last real state with
`where` (TF1's static_rnn), `rnn_fixed` runs all 8 steps of every sequence.

>>> from dualgrad import compiler
>>> fn, inputs = eager_program("mlp")
>>> compiler.export(fn, inputs)(*inputs).shape
(4, 10)
"""
from __future__ import annotations

import importlib

from dualgrad import eager

from .models.common import TASKS, fit

MODELS = ("mlp", "cnn", "rnn", "rnn_fixed", "transformer")
EXAMPLE_BATCH = 4


def _task(name):
    return TASKS["rnn" if name.startswith("rnn") else name]()


def test_inputs(name, n=None):
    """The held-out inputs of the model (the first n), in the order its program takes them."""
    ins = _task(name).test_inputs()
    if name == "rnn":
        ins = (ins[0], ins[2])          # x, mask
    elif name == "rnn_fixed":
        ins = (ins[0],)
    return tuple(a[:n] for a in ins)


def graph_test_inputs(name, n=None):
    """`test_inputs` as the model's TF1 version takes them: the CNN's images NHWC."""
    ins = test_inputs(name, n)
    if name == "cnn":
        from .models.cnn_graph import nhwc
        ins = (nhwc(ins[0]),)
    return ins


def masked_lstm(model):
    """The eager RowLSTM run over all 8 rows, a mask keeping each sequence's last real state."""
    def rnn(x, mask):
        h, c = model.cell(x[:, 0])
        for t in range(1, x.shape[1]):
            h2, c2 = model.cell(x[:, t], (h, c))
            going = mask[:, t:t + 1] > 0
            h, c = eager.where(going, h2, h), eager.where(going, c2, c)
        return model.head(h)
    return rnn


def fixed_lstm(model):
    """The eager RowLSTM over every row of x (a fixed length)."""
    def rnn(x):
        return model(x, (x.shape[1],))
    return rnn


def _check(name, known):
    if name not in known:
        raise ValueError(f"unknown model {name!r}; choose from {', '.join(known)}")


def eager_program(name, weights=None, seed=0, epochs=0):
    """(fn, example inputs) of the model's eager version, for compiler.export; trained for
    `epochs` first (0: the initial weights of `seed`)."""
    _check(name, MODELS)
    base = "rnn" if name.startswith("rnn") else name
    tr = importlib.import_module(f"{__package__}.models.{base}_eager").build(weights, seed=seed)
    if epochs:
        fit(tr, _task(name), epochs)
    model = tr.model
    fn = {"rnn": masked_lstm, "rnn_fixed": fixed_lstm}.get(name, lambda m: m)(model)
    return fn, test_inputs(name, EXAMPLE_BATCH)


GRAPH_MODELS = ("mlp", "cnn", "rnn", "transformer")


def graph_program(name, weights=None, seed=0, epochs=0):
    """(trainer, input placeholders, logits) of the model's TF1 version; the trainer's session
    holds the variables. The recurrent one is the static unroll with its mask."""
    _check(name, GRAPH_MODELS)
    tr = importlib.import_module(f"{__package__}.models.{name}_graph").build(weights, seed=seed)
    if epochs:
        fit(tr, _task(name), epochs)
    inputs = [tr.x, tr.mask] if name in ("rnn", "transformer") else [tr.x]
    return tr, inputs, tr.logits

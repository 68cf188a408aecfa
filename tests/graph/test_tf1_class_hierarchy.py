"""The graph engine's classes relate as tf.compat.v1's: for every two classes both name in a
namespace (tf, tf.train, tf.nn.rnn_cell, tf.layers, tf.errors, tf.initializers, tf.losses,
tf.summary, tf.data, tf.io), `issubclass(a, b)` is the same.

TF1 programs test classes: `except tf.errors.OpError`, `isinstance(cell, tf.nn.rnn_cell.LSTMCell)`,
`isinstance(sess, tf.Session)`. A dualgrad BasicLSTMCell that was an LSTMCell, or an
InteractiveSession that was a Session, took another branch than under TF without a word.
"""
import pytest

import dualgrad.graph as dg
from tests.graph.tf_oracle import load_tf

SPACES = ["", "train", "nn.rnn_cell", "layers", "errors", "initializers", "losses", "summary",
          "data", "io"]

# NOTE: the one known difference, kept visible: dualgrad's Variable is a Tensor (the graph
# engine builds on that), TF1's is not, so `isinstance(v, tf.Tensor)` is True here for a
# Variable and False in TF. This row fails when the two agree, so it is taken off then.
KNOWN = {("", "Variable", "Tensor")}


def _get(root, path):
    for part in path.split(".") if path else ():
        root = getattr(root, part, None)
    return root


def _classes(ns):
    return {n: c for n in dir(ns) if not n.startswith("_")
            and isinstance(c := getattr(ns, n, None), type)}


@pytest.fixture(scope="module")
def tf1():
    return load_tf().compat.v1


@pytest.mark.parametrize("space", SPACES)
def test_issubclass_as_tf1(space, tf1):
    theirs, ours = _classes(_get(tf1, space)), _classes(_get(dg, space))
    shared = sorted(theirs.keys() & ours.keys())
    assert shared, f"tf.{space}: no classes in common?"
    wrong = {(space, a, b) for a in shared for b in shared
             if a != b and issubclass(theirs[a], theirs[b]) != issubclass(ours[a], ours[b])}
    known = {k for k in KNOWN if k[0] == space and k[1] in shared and k[2] in shared}
    assert wrong == known, sorted(wrong ^ known)

"""The graph engine's classes relate as tf.compat.v1's: for every two classes both name in a
namespace (tf, tf.train, tf.nn.rnn_cell, tf.layers, tf.errors, tf.initializers, tf.losses,
tf.summary, tf.data, tf.io), `issubclass(a, b)` is the same.

TF1 programs test classes: `except tf.errors.OpError`, `isinstance(cell, tf.nn.rnn_cell.LSTMCell)`,
`isinstance(sess, tf.Session)`, `isinstance(x, tf.Tensor)` (False for a Variable). A dualgrad BasicLSTMCell that was an LSTMCell, or an
InteractiveSession that was a Session, took another branch than under TF without a word.
"""
import pytest

import dualgrad.graph as dg
from tests.graph.tf_oracle import load_tf

SPACES = ["", "train", "nn.rnn_cell", "layers", "errors", "initializers", "losses", "summary",
          "data", "io"]

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
    wrong = [f"issubclass({a}, {b}): TF {ta}" for a in shared for b in shared
             if a != b and (ta := issubclass(theirs[a], theirs[b])) != issubclass(ours[a], ours[b])]
    assert not wrong, "\n".join(wrong)


def test_a_variable_is_no_tensor_as_tf1(tf1):
    """isinstance(v, tf.Tensor) is False for a Variable and True for what reading it gives
    (v.value(), v.read_value(), identity(v), v + 1); tf.is_tensor is True for all, as TF's."""
    import numpy as np
    got = []
    for tf in (tf1, dg):
        with tf.Graph().as_default():
            v = tf.Variable(np.ones(2, np.float32))
            things = [v, v.value(), v.read_value(), tf.identity(v), v + 1, tf.constant(1.0),
                      tf.placeholder(tf.float32), np.ones(2), 3.0]
            # NOTE: isinstance(v, tf.Variable) is not compared: TF 2's compat.v1.Variable
            # says False for the ResourceVariable it makes (TF 1.x said True, as dualgrad)
            got.append([(isinstance(t, tf.Tensor), tf.is_tensor(t)) for t in things]
                       + [issubclass(tf.Variable, tf.Tensor)])
    assert got[1] == got[0]

"""`nn.dynamic_rnn` collects each step's output once (a stacked loop output, as TF1's
TensorArray), so long sequences cost time linear in their length; its gradients equal the
unrolled `static_rnn`'s (`tf` is dualgrad.graph)."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import graph as tf
from dualgrad.graph.control_flow import while_loop_stacked

RNG = np.random.default_rng(3)


def test_dynamic_rnn_gradients_equal_the_unrolled_rnn():
    x = tf.placeholder(tf.float64, (None, 6, 3))
    lengths = tf.placeholder(tf.int32, (None,))
    cell = tf.nn.rnn_cell.LSTMCell(4)
    outs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=tf.float64)
    s_outs, s_state = tf.nn.static_rnn(cell, tf.unstack(x, axis=1), sequence_length=lengths,
                                       dtype=tf.float64)
    w = RNG.standard_normal((6, 4))
    loss = tf.reduce_sum(tf.tanh(outs) * w) + tf.reduce_sum(state.c)
    s_loss = tf.reduce_sum(tf.tanh(tf.stack(s_outs, axis=1)) * w) + tf.reduce_sum(s_state.c)
    wrt = [x] + tf.trainable_variables()
    grads, s_grads = tf.gradients(loss, wrt), tf.gradients(s_loss, wrt)
    feed = {x: RNG.standard_normal((3, 6, 3)), lengths: [6, 2, 0]}
    for optimize in (False, True):
        with tf.Session(optimize=optimize) as sess:
            sess.run(tf.global_variables_initializer())
            got, want = sess.run([grads, s_grads], feed)
        for g, s in zip(got, want):
            np.testing.assert_allclose(g, s, rtol=1e-10, atol=1e-12)
        assert np.abs(got[1]).sum() > 0


def test_each_step_is_written_once_not_concatenated():
    x = tf.placeholder(tf.float32, (None, 50, 3))
    outs, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(4), x, dtype=tf.float32)
    loop = next(n for n in tf.get_default_graph().get_operations() if n.type == "while")
    # the loop carries the step and the state only; the outputs leave it stacked
    assert loop.attrs["n_vars"] == 2 and [tuple(t.shape) for t in loop.outputs] == \
        [(), (None, 4), (None, None, 4)]
    assert outs.shape == (None, 50, 4)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(outs, {x: np.ones((2, 50, 3), np.float32)}).shape == (2, 50, 4)


def test_a_loop_that_never_runs_stacks_nothing_or_says_why():
    n = tf.placeholder(tf.int32, ())
    i0 = tf.constant(0)
    _, squares = while_loop_stacked(lambda i: i < n, lambda i: (i + 1, tf.cast(i * i, tf.float32)
                                                                   * tf.ones([2])), [i0], 1)
    with tf.Session() as sess:
        assert sess.run(squares, {n: 3}).tolist() == [[0, 0], [1, 1], [4, 4]]
        assert sess.run(squares, {n: 0}).shape == (0, 2)
    rows = tf.placeholder(tf.float32, (None,))
    _, got = while_loop_stacked(lambda i: i < n, lambda i: (i + 1, rows * 2.0), [i0], 1)
    with tf.Session() as sess:
        with pytest.raises(Exception, match="no iteration ran"):
            sess.run(got, {n: 0, rows: [1.0]})

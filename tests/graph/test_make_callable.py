"""TF1's `Session.make_callable(fetches, feed_list, accept_options)`, and what `run` hands
back: arrays the caller owns (`tf` is dualgrad.graph)."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import graph as tf
from dualgrad.graph.errors import InvalidArgumentError


def _linear():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
        y = tf.matmul(x, w)
        step = tf.assign_add(w, tf.ones_like(w))
        g.init = tf.global_variables_initializer()
    return g, x, w, y, step


@pytest.mark.parametrize("optimize", [False, True])
def test_callable_matches_run_and_keeps_fetch_structure(optimize):
    g, x, w, y, _ = _linear()
    xs = np.ones((4, 3), np.float32)
    with tf.Session(graph=g, optimize=optimize) as sess:
        sess.run(g.init)
        single = sess.make_callable(y, feed_list=[x])
        nested = sess.make_callable({"y": y, "pair": (y, w)}, feed_list=[x])
        np.testing.assert_array_equal(single(xs), sess.run(y, {x: xs}))
        out = nested(xs)
        assert set(out) == {"y", "pair"} and isinstance(out["pair"], tuple)
        listed = sess.make_callable([{"y": y}, (w,)], feed_list=[x])(xs)
        assert isinstance(listed, list) and set(listed[0]) == {"y"} and len(listed[1]) == 1
        np.testing.assert_array_equal(out["pair"][1], sess.run(w))
        # a new batch size: the callable follows, as run does
        assert single(np.ones((7, 3), np.float32)).shape == (7, 2)
        # a list feeds, cast as run casts (float64 -> float32), by name too
        by_name = sess.make_callable(y, feed_list=["x:0"])
        assert by_name([[1.0, 0.0, 0.0]]).dtype == np.float32


def test_callable_without_feeds_runs_an_op_and_state_persists():
    g, x, w, y, step = _linear()
    with tf.Session(graph=g) as sess:
        sess.run(g.init)
        bump = sess.make_callable(step)
        read = sess.make_callable(w)
        bump()
        bump()
        np.testing.assert_array_equal(read(), np.arange(6).reshape(3, 2) + 2)


def test_callable_checks_feeds_like_run():
    g, x, w, y, _ = _linear()
    with tf.Session(graph=g) as sess:
        sess.run(g.init)
        f = sess.make_callable(y, [x])
        f(np.ones((2, 3), np.float32))
        with pytest.raises(InvalidArgumentError, match="shape"):
            f(np.ones((2, 4), np.float32))
        with pytest.raises(InvalidArgumentError, match="not representable"):
            f(np.full((2, 3), 1e300))
        with pytest.raises(InvalidArgumentError, match="shape"):   # after a cached call too
            f(np.ones((3,), np.float32))
        with pytest.raises(TypeError, match="takes 1 feed value"):
            f(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))


def test_callable_arguments_and_options():
    g, x, w, y, _ = _linear()
    with tf.Session(graph=g) as sess:
        sess.run(g.init)
        with pytest.raises(TypeError, match="feed_list"):
            sess.make_callable(y, feed_list=x)
        with pytest.raises(InvalidArgumentError, match="names an operation, not a tensor"):
            sess.make_callable(y, feed_list=[y.op])
        assert sess.make_callable(y, feed_list=[y])(np.zeros((1, 2), np.float32)).shape == (1, 2)
        plain = sess.make_callable(y, [x])
        with pytest.raises(TypeError, match="accept_options=True"):
            plain(np.ones((1, 3), np.float32), options=tf.RunOptions())
        traced = sess.make_callable(y, [x], accept_options=True)
        meta = tf.RunMetadata()
        out = traced(np.ones((1, 3), np.float32), options=tf.RunOptions(), run_metadata=meta)
        assert out.shape == (1, 2)
    with pytest.raises(RuntimeError, match="closed Session"):
        plain(np.ones((1, 3), np.float32))
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.make_callable(y, [x])


def test_run_hands_back_arrays_the_caller_owns():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        v = tf.Variable(np.ones((2, 3), np.float32), name="v")
        c = tf.constant(np.ones((3, 2), np.float32))
        y = x * 2.0
        g.init = tf.global_variables_initializer()
        folded = c * 2.0   # computed once by the optimiser, a constant of the plan
        fetches = [x, tf.transpose(x), tf.transpose(v), tf.transpose(c), y,
                   tf.transpose(y), tf.reshape(y, [3, 2]), folded, tf.transpose(folded)]
    xs = np.ones((2, 3), np.float32)
    for optimize in (False, True):
        with tf.Session(graph=g, optimize=optimize) as sess:
            sess.run(g.init)
            outs = sess.run(fetches, {x: xs})
            for o in outs:   # writing into one result changes nothing else
                o += 100.0
            np.testing.assert_array_equal(xs, 1.0)
            np.testing.assert_array_equal(sess.run(v), 1.0)
            np.testing.assert_array_equal(sess.run(c), 1.0)
            assert [float(o.flat[0]) for o in outs] == [101.0, 101.0, 101.0, 101.0, 102.0,
                                                        102.0, 102.0, 102.0, 102.0]
            again = sess.run(fetches[-2:], {x: xs})
            assert [float(o.flat[0]) for o in again] == [2.0, 2.0]

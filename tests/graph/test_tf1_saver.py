"""TF1's checkpoint idiom: `Saver(max_to_keep=)`, `save(sess, path, global_step=)`,
`latest_checkpoint`, resuming training from the newest checkpoint (`tf` is dualgrad.graph)."""
from __future__ import annotations

import os

import numpy as np
import pytest

from dualgrad import graph as tf
from dualgrad.comparisons.data import digits
from dualgrad.graph.errors import FailedPreconditionError

D = digits()


def build():
    """A softmax regression with a global step, as TF1 tutorials write it."""
    x = tf.placeholder(tf.float32, [None, 64], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    w = tf.get_variable("w", [64, 10], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [10], initializer=tf.zeros_initializer())
    logits = tf.matmul(x, w) + b
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    step = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=step)
    return x, y, loss, train_op, step


def feed(x, y, i):
    lo = (i * 32) % 900
    return {x: D.x_train[lo:lo + 32], y: D.y_train[lo:lo + 32]}


def files(d):
    return sorted(f for f in os.listdir(d) if not f.startswith("."))


def train_and_resume(ckpt_dir, optimize):
    os.makedirs(ckpt_dir)
    g = tf.Graph()
    with g.as_default():
        x, y, loss, train_op, step = build()
        saver = tf.train.Saver(max_to_keep=2)
        with tf.Session(optimize=optimize) as sess:
            sess.run(tf.global_variables_initializer())
            losses = []
            for i in range(12):
                _, l_ = sess.run([train_op, loss], feed(x, y, i))
                losses.append(l_)
                if (i + 1) % 4 == 0:
                    saver.save(sess, os.path.join(ckpt_dir, "model.ckpt"), global_step=step)
            after = sess.run(loss, feed(x, y, 12))
    assert losses[-1] < 0.75 * losses[0]         # it learns
    assert [os.path.basename(p) for p in saver.last_checkpoints] == ["model.ckpt-8",
                                                                     "model.ckpt-12"]
    assert files(ckpt_dir) == ["checkpoint", "model.ckpt-12.json", "model.ckpt-12.safetensors",
                               "model.ckpt-8.json", "model.ckpt-8.safetensors"]
    latest = tf.train.latest_checkpoint(ckpt_dir)
    assert latest == os.path.join(ckpt_dir, "model.ckpt-12")
    state = tf.train.get_checkpoint_state(ckpt_dir)
    assert state.all_model_checkpoint_paths == [os.path.join(ckpt_dir, "model.ckpt-8"), latest]

    g2 = tf.Graph()                                  # a new process would build it again
    with g2.as_default():
        x, y, loss, train_op, step = build()
        saver = tf.train.Saver()
        with tf.Session(optimize=optimize) as sess:
            saver.restore(sess, tf.train.latest_checkpoint(ckpt_dir))
            assert sess.run(step) == 12
            np.testing.assert_allclose(sess.run(loss, feed(x, y, 12)), after, rtol=1e-6)
            sess.run(train_op, feed(x, y, 12))       # and training goes on from there
            assert sess.run(step) == 13
            losses.append(sess.run(loss, feed(x, y, 13)))
    return np.array(losses)


def test_train_save_every_few_steps_keeps_the_newest_and_resumes(tmp_path):
    off = train_and_resume(str(tmp_path / "off"), optimize=False)
    on = train_and_resume(str(tmp_path / "on"), optimize=True)
    np.testing.assert_allclose(on, off, rtol=1e-5)


def test_global_step_as_int_and_max_to_keep_none_keeps_every_file(tmp_path):
    v = tf.Variable(np.zeros(3, np.float32), name="v")
    bump = v.assign_add(np.ones(3, np.float32))
    saver = tf.train.Saver(max_to_keep=None)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(7):
            sess.run(bump)
            path = saver.save(sess, str(tmp_path / "m"), global_step=i)
    assert path == str(tmp_path / "m-6")
    assert len([f for f in files(tmp_path) if f.endswith(".json")]) == 7
    # TF1: with max_to_keep None every file stays, and the state file names only the last
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.all_model_checkpoint_paths == [str(tmp_path / "m-6")]
    with tf.Session() as sess:
        saver.restore(sess, str(tmp_path / "m-3"))
        assert sess.run(v).tolist() == [4.0, 4.0, 4.0]


def test_saving_the_same_path_again_and_the_default_five(tmp_path):
    v = tf.Variable(1.0, name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(v.initializer)
        for i in range(8):
            saver.save(sess, str(tmp_path / "m"), global_step=i)
        saver.save(sess, str(tmp_path / "m"), global_step=4)   # re-saved: newest again
        saver.save(sess, str(tmp_path / "plain"))
    names = [os.path.basename(p) for p in saver.last_checkpoints]
    assert names == ["m-5", "m-6", "m-7", "m-4", "plain"]
    assert not os.path.exists(tmp_path / "m-3.json")
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "plain")


def test_pad_step_number_and_relative_state_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.makedirs("run")
    tf.Variable(2.0, name="v")
    saver = tf.train.Saver(pad_step_number=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert saver.save(sess, "run/model", global_step=3) == "run/model-00000003"
    assert (tmp_path / "run" / "checkpoint").read_text().splitlines()[0] == \
        'model_checkpoint_path: "model-00000003"'
    assert tf.train.latest_checkpoint("run") == os.path.join("run", "model-00000003")


def test_latest_checkpoint_is_none_without_checkpoints(tmp_path):
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    assert tf.train.get_checkpoint_state(str(tmp_path)) is None
    v = tf.Variable(1.0, name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(v.initializer)
        saver.save(sess, str(tmp_path / "m"), global_step=1)
    for f in ("m-1.json", "m-1.safetensors"):
        os.remove(tmp_path / f)
    assert tf.train.latest_checkpoint(str(tmp_path)) is None   # state file names a lost one


def test_what_raises(tmp_path):
    with pytest.raises(ValueError, match="No variables to save"):
        tf.train.Saver(var_list=[])
    with pytest.raises(NotImplementedError, match="dict"):
        tf.train.Saver(var_list={"w": None})
    v = tf.Variable(1.0, name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        with pytest.raises(FailedPreconditionError, match="uninitialized value 'v'"):
            saver.save(sess, str(tmp_path / "m"))
        with pytest.raises(ValueError, match="save_path when it is None"):
            saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
        sess.run(v.initializer)
        saver.save(sess, str(tmp_path / "m"))


def test_var_list_saves_and_restores_only_those(tmp_path):
    a = tf.Variable(1.0, name="a")
    b = tf.Variable(2.0, name="b")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        tf.train.Saver([a]).save(sess, str(tmp_path / "only_a"))
        sess.run([a.assign(10.0), b.assign(20.0)])
        tf.train.Saver([a]).restore(sess, str(tmp_path / "only_a"))
        assert sess.run([a, b]) == [1.0, 20.0]
        with pytest.raises(Exception, match="'b' is not in"):
            tf.train.Saver().restore(sess, str(tmp_path / "only_a"))

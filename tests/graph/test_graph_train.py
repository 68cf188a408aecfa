"""Optimizers against hand-computed NumPy, the digits MLP, and eager vs graph step by step."""
from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits   # a scikit-learn dependency

from dualgrad import graph

TARGET = np.array([[1.0, -2.0], [0.5, 3.0]])
W0 = np.array([[0.3, 0.1], [-0.2, 0.4]])


def _quadratic(dtype=np.float64):
    """loss = 0.5 * sum((w - t)^2), so d loss / d w = w - t."""
    w = graph.Variable(W0.astype(dtype), name="w")
    loss = 0.5 * graph.reduce_sum((w - TARGET.astype(dtype)) ** 2)
    return w, loss


def _steps(train_op, w, n=4):
    with graph.Session(optimize=False) as s:
        s.run(graph.global_variables_initializer())
        out = []
        for _ in range(n):
            s.run(train_op)
            out.append(s.run(w))
        return out


def test_gradient_descent_formula():
    w, loss = _quadratic()
    got = _steps(graph.train.GradientDescentOptimizer(0.1).minimize(loss), w)
    v = W0.copy()
    for k in range(4):
        v = v - 0.1 * (v - TARGET)
        np.testing.assert_allclose(got[k], v, rtol=1e-12)


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum_formula(nesterov):
    w, loss = _quadratic()
    opt = graph.train.MomentumOptimizer(0.1, 0.9, use_nesterov=nesterov)
    got = _steps(opt.minimize(loss), w)
    v, acc = W0.copy(), np.zeros_like(W0)
    for k in range(4):
        g = v - TARGET
        acc = 0.9 * acc + g
        v = v - 0.1 * (g + 0.9 * acc if nesterov else acc)
        np.testing.assert_allclose(got[k], v, rtol=1e-12)
    assert opt.get_slot_names() == ["Momentum"] and opt.get_slot(w, "Momentum") is not None


def test_adam_formula_tf1():
    w, loss = _quadratic()
    got = _steps(graph.train.AdamOptimizer(0.01, 0.9, 0.999, 1e-8).minimize(loss), w)
    v, m, u = W0.copy(), np.zeros_like(W0), np.zeros_like(W0)
    for t in range(1, 5):
        g = v - TARGET
        m = 0.9 * m + 0.1 * g
        u = 0.999 * u + 0.001 * g * g
        lr_t = 0.01 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        v = v - lr_t * m / (np.sqrt(u) + 1e-8)
        np.testing.assert_allclose(got[t - 1], v, rtol=1e-10)


def test_compute_and_apply_gradients_with_var_list_and_global_step():
    w, loss = _quadratic()
    frozen = graph.Variable(np.ones(2), name="frozen")
    total = loss + graph.reduce_sum(frozen * frozen)
    step = graph.train.get_or_create_global_step()
    opt = graph.train.GradientDescentOptimizer(0.5)
    gv = opt.compute_gradients(total, var_list=[w])
    assert [v is w for _, v in gv] == [True]
    train = opt.apply_gradients(gv, global_step=step)
    assert train.name == "GradientDescent"
    with graph.Session(optimize=False) as s:
        s.run(graph.global_variables_initializer())
        s.run(train)
        s.run(train)
        assert s.run(step) == 2 and s.run(frozen).tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="no gradients provided"):
        opt.minimize(graph.reduce_sum(frozen) * 0.0 + graph.constant(1.0, "float64"),
                     var_list=[w])


def test_learning_rate_can_be_a_placeholder():
    w, loss = _quadratic()
    lr = graph.placeholder(graph.float64, (), name="lr")
    train = graph.train.GradientDescentOptimizer(lr).minimize(loss)
    with graph.Session(optimize=False) as s:
        s.run(graph.global_variables_initializer())
        s.run(train, {lr: 0.0})
        np.testing.assert_array_equal(s.run(w), W0)
        s.run(train, {lr: 1.0})
        np.testing.assert_allclose(s.run(w), TARGET)


# -- the digits MLP ------------------------------------------------------------------------------
N_TEST = 297


def _digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    perm = np.random.default_rng(0).permutation(len(y))
    test, train = perm[:N_TEST], perm[N_TEST:]
    return x[train], y[train], x[test], y[test]


def _mlp(init=None):
    """64-128-10 MLP built with placeholders; `init` = (W1, b1, W2, b2) in TF layout."""
    x = graph.placeholder(graph.float32, (None, 64), name="x")
    y = graph.placeholder(graph.int64, (None,), name="y")
    k = init or (None,) * 4
    h = graph.nn.dense(x, 128, activation=graph.nn.relu, name="hidden",
                       kernel_initializer=k[0], bias_initializer=k[1])
    logits = graph.nn.dense(h, 10, name="out", kernel_initializer=k[2], bias_initializer=k[3])
    loss = graph.reduce_mean(graph.nn.sparse_softmax_cross_entropy_with_logits(
        labels=y, logits=logits), name="loss")
    return x, y, logits, loss


@pytest.mark.parametrize("optimize", [False, True])
def test_mlp_trains_on_digits_to_95_percent(optimize):
    x_train, y_train, x_test, y_test = _digits()
    graph.set_random_seed(0)
    x, y, logits, loss = _mlp()
    train = graph.train.MomentumOptimizer(0.05, 0.9).minimize(loss)
    accuracy = graph.reduce_mean(graph.cast(graph.equal(graph.argmax(logits, 1), y),
                                            graph.float32))
    rng = np.random.default_rng(1)
    losses = []
    with threadpool_limits(limits=1, user_api="blas"), graph.Session(optimize=optimize) as s:
        s.run(graph.global_variables_initializer())
        for _ in range(20):
            order = rng.permutation(len(y_train))
            for i in range(0, len(order), 64):
                idx = order[i:i + 64]
                lv, _ = s.run([loss, train], {x: x_train[idx], y: y_train[idx]})
                losses.append(float(lv))
        acc = s.run(accuracy, {x: x_test, y: y_test})
    assert np.mean(losses[-20:]) < 0.2 * np.mean(losses[:20])
    assert acc >= 0.95, acc


def test_mlp_losses_agree_with_eager_step_by_step():
    from dualgrad import eager
    from dualgrad.eager import nn, optim
    x_train, y_train, _, _ = _digits()
    eager.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    sd = {k: np.array(v.data, copy=True) for k, v in model.state_dict().items()}
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x, y, _, loss = _mlp((sd["0.weight"].T, sd["0.bias"], sd["2.weight"].T, sd["2.bias"]))
    train = graph.train.MomentumOptimizer(0.05, 0.9).minimize(loss)
    rng = np.random.default_rng(3)
    with threadpool_limits(limits=1, user_api="blas"), graph.Session(optimize=False) as s:
        s.run(graph.global_variables_initializer())
        for step in range(60):
            idx = rng.choice(len(y_train), 32, replace=False)
            xb, yb = x_train[idx], y_train[idx]
            el = nn.functional.cross_entropy(model(eager.tensor(xb)), eager.tensor(yb))
            opt.zero_grad()
            el.backward()
            opt.step()
            gl, _ = s.run([loss, train], {x: xb, y: yb})
            np.testing.assert_allclose(gl, el.item(), rtol=2e-5, atol=1e-6,
                                       err_msg=f"step {step}")
        w2 = s.run(graph.get_default_graph().get_tensor_by_name("out/kernel:0"))
    np.testing.assert_allclose(w2, model.state_dict()["2.weight"].data.T, rtol=1e-4,
                               atol=1e-5)

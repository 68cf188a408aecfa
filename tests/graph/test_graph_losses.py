"""graph.losses: values against NumPy, and the silent-broadcast warning at build time."""
import inspect

import numpy as np
import pytest

from dualgrad import graph
from tests.graph.tf1_check import check_grad, run_both


def test_mean_squared_error_matches_numpy():
    g = graph.Graph()
    with g.as_default():
        y = graph.placeholder(graph.float32, (None, 3))
        p = graph.placeholder(graph.float32, (None, 3))
        loss = graph.losses.mean_squared_error(y, p, weights=2.0)
    a, b = np.random.default_rng(0).standard_normal((2, 4, 3)).astype(np.float32)
    with graph.Session(g) as s:
        got = s.run(loss, {y: a, p: b})
    np.testing.assert_allclose(got, 2.0 * np.mean((a - b) ** 2), rtol=1e-6)


def test_labels_that_would_broadcast_raise_at_build_time_at_the_users_line():
    g = graph.Graph()
    with g.as_default():
        y = graph.placeholder(graph.float32, (None,))
        p = graph.placeholder(graph.float32, (None, 1))
        with pytest.raises(ValueError, match=r"mean_squared_error: predictions \(\?, 1\) and "
                                             r"labels \(\?,\) have incompatible shapes") as e:
            line = inspect.currentframe().f_lineno + 1
            graph.losses.mean_squared_error(y, p)
    assert f"test_graph_losses.py:{line}" in str(e.value)


@pytest.mark.parametrize("sparse", [True, False])
def test_softmax_cross_entropy_losses(sparse):
    logits_v = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    labels_v = np.array([0, 3, 1, 1, 2])
    g = graph.Graph()
    with g.as_default():
        logits = graph.placeholder(graph.float32, (None, 4))
        if sparse:
            labels = graph.placeholder(graph.int64, (None,))
            loss = graph.losses.sparse_softmax_cross_entropy(labels, logits)
            feed = labels_v
        else:
            labels = graph.placeholder(graph.float32, (None, 4))
            loss = graph.losses.softmax_cross_entropy(labels, logits)
            feed = np.eye(4, dtype=np.float32)[labels_v]
    with graph.Session(g) as s:
        got = s.run(loss, {logits: logits_v, labels: feed})
    z = logits_v - logits_v.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    np.testing.assert_allclose(got, -logp[np.arange(5), labels_v].mean(), rtol=1e-5)


# -- TF1's weights, reductions and the LOSSES collection ---------------------------------------
R = graph.losses.Reduction
RNG2 = np.random.default_rng(5)
Y = RNG2.uniform(0.05, 0.95, (4, 3)).astype(np.float32)
P = RNG2.uniform(0.05, 0.95, (4, 3)).astype(np.float32) * 3 - 1


def _reduce(per, w, reduction):
    """compute_weighted_loss's reductions, from the TF docs, in NumPy."""
    w = np.broadcast_to(np.asarray(w, np.float32), per.shape)
    wl = per * w
    if reduction == R.NONE:
        return wl
    if reduction == R.SUM:
        return wl.sum()
    if reduction == R.MEAN:
        return wl.sum() / w.sum() if w.sum() else 0.0
    if reduction == R.SUM_OVER_BATCH_SIZE:
        return wl.sum() / per.size
    n = (w != 0).sum()
    return wl.sum() / n if n else 0.0


PER_ELEMENT = {
    "absolute_difference": lambda y, p: np.abs(p - y),
    "mean_squared_error": lambda y, p: (p - y) ** 2,
    "huber_loss": lambda y, p: np.where(np.abs(p - y) <= 1.0, 0.5 * (p - y) ** 2,
                                        0.5 + (np.abs(p - y) - 1.0)),
    "log_loss": lambda y, p: -y * np.log(np.clip(p, 0.01, 0.99) + 1e-7)
    - (1 - y) * np.log(1 - np.clip(p, 0.01, 0.99) + 1e-7),
    "hinge_loss": lambda y, p: np.maximum(0, 1 - (2 * y - 1) * p),
}


@pytest.mark.parametrize("name", sorted(PER_ELEMENT))
@pytest.mark.parametrize("weights", [1.0, 0.0, "column", "full"])
@pytest.mark.parametrize("reduction", [R.SUM_BY_NONZERO_WEIGHTS, R.NONE, R.SUM, R.MEAN,
                                       R.SUM_OVER_BATCH_SIZE])
def test_elementwise_losses_weights_and_reductions(name, weights, reduction):
    wv = {"column": np.array([[1.0], [0.0], [2.0], [0.5]], np.float32),
          "full": (RNG2.uniform(size=(4, 3)) > 0.4).astype(np.float32) * 1.5}.get(weights,
                                                                                   weights)
    y = graph.placeholder(graph.float32, (None, 3))
    p = graph.placeholder(graph.float32, (None, 3))
    w = graph.placeholder(graph.float32, np.shape(wv)) if np.ndim(wv) else wv
    pred = graph.clip_by_value(p, 0.01, 0.99) if name == "log_loss" else p
    loss = getattr(graph.losses, name)(y, pred, weights=w, reduction=reduction)
    feed = {y: Y, p: P, **({w: wv} if np.ndim(wv) else {})}
    got = run_both(loss, feed)
    np.testing.assert_allclose(got, _reduce(PER_ELEMENT[name](Y, P), wv, reduction), rtol=2e-5,
                               atol=1e-7)
    assert graph.get_collection(graph.GraphKeys.LOSSES) == [loss]
    assert loss.shape[-1:] == (3,) if reduction == R.NONE else loss.shape == ()


def test_huber_delta_and_its_gradient():
    check_grad(lambda y, p: graph.losses.huber_loss(y, p, delta=0.5, reduction=R.NONE),
               [[0.1, 0.9, -0.2]], [[0.3, 0.0, 1.4]], rtol=1e-3, atol=1e-4, eps=1e-3)
    y = graph.constant([[0.0, 0.0]])
    got = run_both(graph.losses.huber_loss(y, graph.constant([[0.3, 2.0]]), delta=0.5,
                                           reduction=R.NONE))
    np.testing.assert_allclose(got, [[0.045, 0.5 * 0.25 + 0.5 * 1.5]], rtol=1e-6)


def test_log_loss_epsilon_and_gradient():
    check_grad(lambda y, p: graph.losses.log_loss(y, p, epsilon=1e-3),
               [[0.2, 0.9, 1.0]], [[0.3, 0.6, 0.9]], rtol=1e-3, atol=1e-4, eps=1e-4)


def test_float64_inputs_compute_in_float32_as_tf1():
    y = graph.placeholder(graph.float64, (None, 3))
    loss = graph.losses.absolute_difference(y, y * 2.0)
    assert loss.dtype == np.float32
    per = graph.losses.compute_weighted_loss(y, reduction=R.NONE)
    assert per.dtype == np.float64 and "cast" in [n.type for n in per.graph.get_operations()]


def test_weights_that_do_not_broadcast_to_the_losses_raise():
    y = graph.placeholder(graph.float32, (None, 3))
    with pytest.raises(ValueError, match=r"weights \(1, 4\) must be a scalar or have the rank"):
        graph.losses.mean_squared_error(y, y, weights=np.ones((1, 4), np.float32))
    with pytest.raises(ValueError, match="Invalid Reduction Key"):
        graph.losses.absolute_difference(y, y, reduction="mean")


def test_cross_entropy_losses_weights_and_label_smoothing():
    logits_v = RNG2.standard_normal((4, 3)).astype(np.float32)
    onehot = np.eye(3, dtype=np.float32)[[0, 2, 1, 1]]
    wv = np.array([1.0, 0.0, 2.0, 1.0], np.float32)
    logits = graph.placeholder(graph.float32, (None, 3))
    labels = graph.placeholder(graph.float32, (None, 3))
    ids = graph.placeholder(graph.int64, (None, 1))
    soft = graph.losses.softmax_cross_entropy(labels, logits, weights=wv, label_smoothing=0.2)
    sparse = graph.losses.sparse_softmax_cross_entropy(ids, logits, weights=wv)
    sig = graph.losses.sigmoid_cross_entropy(labels, logits, label_smoothing=0.1,
                                             reduction=R.SUM)
    got = run_both([soft, sparse, sig], {logits: logits_v, labels: onehot,
                                         ids: np.array([[0], [2], [1], [1]])})
    z = logits_v - logits_v.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    smooth = onehot * 0.8 + 0.2 / 3
    np.testing.assert_allclose(got[0], (-(smooth * logp).sum(1) * wv).sum() / 3, rtol=1e-5)
    np.testing.assert_allclose(got[1], (-(onehot * logp).sum(1) * wv).sum() / 3, rtol=1e-5)
    t = onehot * 0.9 + 0.05
    x = logits_v
    np.testing.assert_allclose(got[2], (np.maximum(x, 0) - x * t + np.log1p(np.exp(-np.abs(x)))
                                        ).sum(), rtol=1e-5)


def test_get_total_loss_sums_the_collection():
    y = graph.placeholder(graph.float32, (None, 3))
    a = graph.losses.absolute_difference(y, y * 2.0)
    b = graph.losses.mean_squared_error(y, y * 3.0, loss_collection=None)
    reg = graph.reduce_sum(y) * 0.0 + 0.5
    graph.add_to_collection(graph.GraphKeys.REGULARIZATION_LOSSES, reg)
    own = graph.reduce_mean(y)
    graph.losses.add_loss(own)
    assert graph.losses.get_losses() == [a, own]
    total = graph.losses.get_total_loss()
    no_reg = graph.losses.get_total_loss(add_regularization_losses=False, name="plain")
    assert total.name == "total_loss:0" and no_reg.name == "plain:0"
    yv = RNG2.standard_normal((2, 3)).astype(np.float32)
    t, n, r, bv = run_both([total, no_reg, graph.losses.get_regularization_loss(), b], {y: yv})
    np.testing.assert_allclose(t, np.abs(yv).mean() + yv.mean() + 0.5, rtol=1e-5)
    np.testing.assert_allclose(n, np.abs(yv).mean() + yv.mean(), rtol=1e-5)
    assert r == 0.5 and all(x is not b for x in graph.losses.get_losses())


def test_get_total_loss_without_losses_raises():
    with pytest.raises(ValueError, match="no losses found"):
        graph.losses.get_total_loss()
    assert run_both(graph.losses.get_regularization_loss()) == 0.0

"""graph.losses: values against NumPy, and the silent-broadcast warning at build time."""
import inspect
import warnings

import numpy as np
import pytest

from dualgrad import graph


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


def test_broadcasting_labels_warn_at_build_time_at_the_users_line():
    g = graph.Graph()
    with g.as_default():
        y = graph.placeholder(graph.float32, (None,))
        p = graph.placeholder(graph.float32, (None, 1))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            line = inspect.currentframe().f_lineno + 1
            graph.losses.mean_squared_error(y, p)
    assert len(w) == 1 and "likely a bug" in str(w[0].message)
    assert w[0].filename.endswith("test_graph_losses.py") and w[0].lineno == line


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

"""tf.metrics' confusion counts, precision, recall and AUC against real tf.compat.v1: the
same batches streamed through both, every update's value and the final read compared, and the
same local variable names."""
import numpy as np
import pytest

from dualgrad import graph as dg

tf = pytest.importorskip("tensorflow").compat.v1

COUNTS = ["true_positives", "false_positives", "true_negatives", "false_negatives",
          "precision", "recall"]


def _stream(lib, metric, batches, weighted, **kw):
    g = lib.Graph()
    with g.as_default():
        labels = lib.placeholder(lib.int64, [None])
        predictions = lib.placeholder(lib.float32, [None])
        weights = lib.placeholder(lib.float32, [None]) if weighted else None
        value, update_op = getattr(lib.metrics, metric)(labels, predictions, weights=weights, **kw)
        names = sorted(v.name for v in lib.get_collection(lib.GraphKeys.LOCAL_VARIABLES))
        with lib.Session(graph=g) as sess:
            sess.run(lib.local_variables_initializer())
            out = []
            for y, p, w in batches:
                feed = {labels: y, predictions: p}
                if weighted:
                    feed[weights] = w
                out.append(sess.run(update_op, feed))
            out.append(sess.run(value))
    return np.array(out), names


def _batches(seed, hard):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(3):
        p = rng.random(40).astype(np.float32)
        out.append((rng.integers(0, 2, 40), (p > 0.5).astype(np.float32) if hard else p,
                    rng.random(40).astype(np.float32)))
    return out


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("metric", COUNTS)
def test_counts_precision_recall_agree_with_tf(metric, weighted):
    batches = _batches(1, hard=True)
    want, want_names = _stream(tf, metric, batches, weighted)
    got, got_names = _stream(dg, metric, batches, weighted)
    assert got_names == want_names
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("kw", [{}, {"curve": "PR"},
                                {"curve": "PR", "summation_method": "careful_interpolation"},
                                {"summation_method": "minoring"},
                                {"summation_method": "majoring", "num_thresholds": 17},
                                {"thresholds": [0.2, 0.5, 0.7]}], ids=str)
def test_auc_agrees_with_tf(kw):
    batches = _batches(2, hard=False)
    want, want_names = _stream(tf, "auc", batches, True, **kw)
    got, got_names = _stream(dg, "auc", batches, True, **kw)
    assert got_names == want_names
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_precision_is_zero_before_any_positive_prediction():
    got, _ = _stream(dg, "precision", [(np.array([1, 0]), np.zeros(2, np.float32), None)], False)
    assert got.tolist() == [0.0, 0.0]


def test_auc_refuses_predictions_outside_0_1_when_updated():
    labels = dg.placeholder(dg.int64, [None])
    predictions = dg.placeholder(dg.float32, [None])
    _, update_op = dg.metrics.auc(labels, predictions)
    with dg.Session() as sess:
        sess.run(dg.local_variables_initializer())
        with pytest.raises(dg.errors.InvalidArgumentError, match=r"predictions must be in \[0, 1\]"):
            sess.run(update_op, {labels: [1, 0], predictions: [0.5, 1.5]})
    with pytest.raises(ValueError, match="curve"):
        dg.metrics.auc(labels, predictions, curve="XY")

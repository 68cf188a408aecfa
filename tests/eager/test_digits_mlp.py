"""An MLP trained with eager.nn + eager.optim on scikit-learn's handwritten digits (offline)."""
import numpy as np
from threadpoolctl import threadpool_limits   # a scikit-learn dependency

from dualgrad import eager
from dualgrad.eager import nn, optim

N_TEST = 297


def _digits():
    from sklearn.datasets import load_digits
    d = load_digits()                                    # 1797 8x8 images shipped with sklearn
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    perm = np.random.default_rng(0).permutation(len(y))
    test, train = perm[:N_TEST], perm[N_TEST:]
    return x[train], y[train], x[test], y[test]


def test_mlp_reaches_95_percent_held_out_accuracy():
    # NOTE: one BLAS thread: on a busy 2-core machine OpenBLAS's threads spin against other
    # processes and make these small matmuls 10x slower (0.4 s -> 4 s here).
    with threadpool_limits(limits=1, user_api="blas"):
        _train_and_check()


def _train_and_check():
    x_train, y_train, x_test, y_test = _digits()
    assert x_train.shape == (1500, 64) and x_test.shape == (N_TEST, 64)
    eager.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(1)
    losses = []
    for epoch in range(20):
        order = rng.permutation(len(y_train))
        for i in range(0, len(order), 64):
            idx = order[i:i + 64]
            loss = nn.functional.cross_entropy(model(eager.tensor(x_train[idx])),
                                               eager.tensor(y_train[idx]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    model.eval()
    with eager.no_grad():
        pred = model(eager.tensor(x_test)).argmax(dim=1).numpy()
    accuracy = float(np.mean(pred == y_test))
    assert np.mean(losses[-20:]) < 0.2 * np.mean(losses[:20])
    assert accuracy >= 0.95, accuracy

"""The digits data: offline, fixed split, the shapes each model wants."""
from __future__ import annotations

import numpy as np

from dualgrad.comparisons import data


def test_split_is_fixed_and_disjoint():
    d = data.digits()
    assert d.x_train.dtype == np.float32 and d.x_train.shape[1] == 64
    assert len(d.y_train) + len(d.y_test) == 1797
    assert 0.0 <= d.x_train.min() and d.x_train.max() <= 1.0
    d2 = data.digits.__wrapped__()
    np.testing.assert_array_equal(d.y_test, d2.y_test)


def test_images_and_row_sequences():
    d = data.digits()
    assert data.images(d.x_train).shape == (len(d.y_train), 1, 8, 8)
    s = data.row_sequences(d.x_train, seed=1)
    assert s.x.shape == (len(d.y_train), 8, 8)
    assert s.lengths.min() >= data.MIN_ROWS and s.lengths.max() == 8
    pad = np.arange(8)[None, :] >= s.lengths[:, None]
    assert not s.x[pad].any()
    np.testing.assert_array_equal(s.mask.sum(1), s.lengths)


def test_length_batches_have_one_length_and_cover_everything():
    s = data.row_sequences(data.digits().x_train, seed=1)
    bs = data.length_batches(s.lengths, 32, seed=0)
    assert all(len(np.unique(s.lengths[b])) == 1 for b in bs)
    assert sorted(np.concatenate(bs).tolist()) == list(range(len(s.lengths)))


def test_batches_depend_on_seed_and_epoch_only():
    a, b = data.batches(100, 32, seed=0, epoch=1), data.batches(100, 32, seed=0, epoch=1)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert len(a) == 3
    assert not np.array_equal(a[0], data.batches(100, 32, seed=0, epoch=2)[0])

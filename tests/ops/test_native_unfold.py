"""unfold/fold (ops/native.py) take a gather over an index map when output rows are short and
the direct loops otherwise: both give the same columns and the same sums, bit for bit."""
import numpy as np
import pytest

from dualgrad.ops import native
from dualgrad.ops.nn import window_outs

GEOMETRIES = [   # (input shape, kernel, stride, padding, dilation)
    ((4, 8, 4, 4), (3, 3), (1, 1), (1, 1), (1, 1)),
    ((3, 2, 9, 7), (3, 2), (2, 1), (1, 0), (2, 1)),
    ((5, 1, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1)),
    ((2, 3, 6, 12), (3, 3), (1, 2), (2, 1), (1, 2)),
    ((0, 3, 5, 5), (3, 3), (1, 1), (1, 1), (1, 1)),
]


@pytest.mark.parametrize("shape, kernel, stride, padding, dilation", GEOMETRIES)
def test_short_rows_gather_matches_the_loops(shape, kernel, stride, padding, dilation):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    ho, wo = window_outs(shape[2:], kernel, stride, padding, dilation)
    assert wo < native._SHORT_ROW
    want = np.empty((shape[0], shape[1] * kernel[0] * kernel[1], ho * wo), np.float32)
    native._unfold(x, want, *kernel, *stride, *padding, *dilation, ho, wo)
    got = native.unfold(x, kernel, stride, padding, dilation, ho, wo)
    np.testing.assert_array_equal(got, want)
    cols = rng.standard_normal(want.shape).astype(np.float32)
    img = np.zeros(shape, np.float32)
    native._fold(cols, img, *kernel, *stride, *padding, *dilation, ho, wo)
    np.testing.assert_array_equal(native.fold(cols, shape, kernel, stride, padding, dilation,
                                              ho, wo), img)

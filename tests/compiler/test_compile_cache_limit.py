"""compile(fn) keeps at most cache_size_limit traces, least recently used dropped first."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from dualgrad import compiler, eager


def test_lru_cap_evicts_least_recently_used_with_one_warning():
    f = compiler.compile(lambda x: (x * 2.0).sum(), cache_size_limit=2)
    xs = {n: eager.tensor(np.ones(n, np.float32)) for n in (2, 3, 4)}
    f(xs[2])
    f(xs[3])
    f(xs[2])                            # 2 is now the most recently used
    with pytest.warns(UserWarning, match="cache_size_limit"):
        assert float(f(xs[4])) == 8.0   # evicts 3
    assert f.traces == 3 and f.evictions == 1 and len(f._entries) == 2
    f(xs[2])
    assert f.traces == 3                # still cached
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the warning is given once
        assert float(f(xs[3])) == 6.0   # traced again
    assert f.traces == 4 and f.evictions == 2


def test_default_limit_and_validation(monkeypatch):
    monkeypatch.setattr(compiler.compiled, "CACHE_SIZE_LIMIT", 1)
    f = compiler.compile(lambda x: x + 1.0)
    f(eager.ones(2))
    with pytest.warns(UserWarning, match="least recently used"):
        f(eager.ones(3))
    assert len(f._entries) == 1
    with pytest.raises(ValueError, match="cache_size_limit must be a positive int"):
        compiler.compile(lambda x: x, cache_size_limit=0)

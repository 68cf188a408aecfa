"""Every elementwise op fuses from its registry entry alone: its scalar form, in the
generator's vocabulary (ops/scalar.py), becomes part of a generated loop whose results equal
the op's kernel. Adding an elementwise op to ops/ adds its case here."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import graph, ops
from tests.opinfo import graph_args, params

RTOL, ATOL = 2e-5, 2e-5   # float32; tanh/erf/exp/log in fused loops are approximations


def _fusable(case):
    op = ops.REGISTRY.get(case.name)
    # NOTE: an identity form (stop_gradient's "{0}") is removed by simplify, not fused
    return op is not None and op.scalar not in (None, "{0}") and any(
        isinstance(a, tuple) and len(a) >= 1 for a in case.sample.args)


def _fused_members(report):
    """The op names inside each fused node of the optimised program."""
    return [{m.op.name for m in n.members} for n in report.program.nodes
            if getattr(n, "members", None)]


@pytest.mark.parametrize("case", params("ok", _fusable))
def test_elementwise_op_fuses_and_matches_its_kernel(case):
    arrays = case.args(np.float32)
    g = graph.Graph()
    with g.as_default():
        args, feeds = graph_args(arrays)
        y = case.fn(*args, **case.sample.attrs)
        follow = ops.eq(y, y)          # a second elementwise op: a group of two at least
    want = case.fn(*arrays, **case.sample.attrs)          # the kernel, on the arrays
    with graph.Session(g, optimize=True) as s:
        got, _ = s.run([y, follow], feeds)
        report = s.last_report
    assert any(case.name in m for m in _fused_members(report)), str(report)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=RTOL, atol=ATOL)

"""Fused elementwise kernels give the unfused graph's values bit for bit.

The optimiser may only change speed: a chain of elementwise ops fused into one numba loop
must round exactly as the op-by-op NumPy kernels do. Generated expressions over the
operations whose rounding fast-math flags change (a*b+c under FMA contraction, division
under approximate reciprocals, reassociated products, casts between float32 and float64),
in float32 and float64, each run by graph.Session unoptimised and optimised (fused) and
compared with np.array_equal. Sample count: SEEDS expressions per dtype (24 each, about 5 s
with a warm kernel cache).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from dualgrad import graph

SEEDS = range(24)
UNARY = ("sqrt", "rsqrt", "neg", "square", "reciprocal", "abs")
BINARY = ("add", "mul", "sub", "div")


def _expression(seed, dtype):
    """A random elementwise program over three inputs, as (description, builder)."""
    rng = np.random.default_rng(seed)
    steps = []
    for _ in range(rng.integers(3, 7)):
        if rng.random() < 0.35:
            steps.append(("u", str(rng.choice(UNARY))))
        else:
            steps.append(("b", str(rng.choice(BINARY)), int(rng.integers(0, 3)),
                          float(np.round(rng.uniform(-3, 3), 3))))
    wide = dtype == "float32" and rng.random() < 0.5   # a float64 round trip in the middle

    def build(xs):
        v = xs[0]
        for k, st in enumerate(steps):
            if wide and k == len(steps) // 2:
                v = graph.cast(graph.cast(v, graph.float64) * 1.0000001, graph.float32)
            if st[0] == "u":
                v = {"sqrt": lambda t: graph.sqrt(graph.abs(t)),
                     "rsqrt": lambda t: graph.rsqrt(graph.abs(t) + 0.5),
                     "neg": graph.negative, "square": graph.square,
                     "reciprocal": lambda t: graph.reciprocal(graph.abs(t) + 0.25),
                     "abs": graph.abs}[st[1]](v)
            else:
                other = xs[st[2]] * np.asarray(st[3], dtype)
                v = {"add": graph.add, "mul": graph.multiply, "sub": graph.subtract,
                     "div": lambda a, b: graph.divide(a, graph.abs(b) + 0.5)}[st[1]](v, other)
        return v
    return steps, build


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_elementwise_chains_equal_the_unfused_graph(dtype):
    rng = np.random.default_rng(7)
    feeds = [rng.standard_normal((3, 257)).astype(dtype) for _ in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # NOTE: NumPy on overflow
        for seed in SEEDS:
            steps, build = _expression(seed, dtype)
            g = graph.Graph()
            with g.as_default():
                xs = [graph.placeholder(dtype, (3, 257)) for _ in range(3)]
                y = build(xs) * 1.5 + xs[1]          # NOTE: a multiply-add for contraction
                feed = dict(zip(xs, feeds))
                with graph.Session(optimize=False) as s:
                    want = s.run(y, feed)
                with graph.Session() as s:
                    got = s.run(y, feed)
                    fused = "fuse" in str(s.last_report)
            assert fused
            assert got.dtype == want.dtype
            assert np.array_equal(got, want, equal_nan=True), f"seed {seed}: {steps}"


def test_a_float32_round_trip_keeps_its_rounding_when_fused():
    x = np.random.default_rng(0).standard_normal(64) * 3
    g = graph.Graph()
    with g.as_default():
        p = graph.placeholder(graph.float64, (64,))
        y = graph.cast(graph.cast(p, graph.float32) * np.float32(0.7) + np.float32(0.3),
                       graph.float64)
        dy = graph.gradients(graph.reduce_sum(y * y), [p])[0]
        with graph.Session(optimize=False) as s:
            want = s.run([y, dy], {p: x})
        with graph.Session() as s:
            got = s.run([y, dy], {p: x})
    for a, b in zip(got, want):
        assert np.array_equal(a, b)

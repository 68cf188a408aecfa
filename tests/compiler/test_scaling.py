"""No optimiser cliffs: fusion groups are capped and forming them costs about linear time."""
from __future__ import annotations

import time

import numpy as np

from dualgrad import graph
from dualgrad.compiler import ir
from dualgrad.compiler.optimize import declared_specs
from dualgrad.compiler.passes import fuse


def chain_graph(n):
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(graph.float32, (4, 8), name="x")
        y = x
        for i in range(n):
            y = graph.tanh(y) + 1.0 if i % 2 else y * 0.5
        loss = graph.reduce_sum(y)
        (gx,) = graph.gradients(loss, [x])
    return [loss, gx]


def groups_of(fetches):
    prog = ir.from_graph(fetches, declared_specs(fetches))
    ir.topo_sort(prog)
    t0 = time.perf_counter()
    groups = fuse.form_groups(prog)
    return groups, time.perf_counter() - t0, len(prog.nodes)


def test_groups_are_capped():
    groups, _, _ = groups_of(chain_graph(400))
    sizes = [len(g.members) for g in groups]
    assert max(sizes) == fuse.MAX_GROUP
    # NOTE: the chain is still fused, in capped pieces: all its 1000 elementwise nodes (400 mul,
    # 200 tanh, 200 add, and tanh's gradient, one tanh_grad node each)
    assert sum(sizes) >= 1000


def test_forming_groups_is_about_linear():
    small, big = chain_graph(300), chain_graph(1200)
    t_small = min(groups_of(small)[1] for _ in range(3))
    t_big, nodes_big = min((groups_of(big)[1:] for _ in range(3)), key=lambda r: r[0])
    nodes_small = groups_of(small)[2]
    ratio = (t_big / nodes_big) / (t_small / nodes_small)
    # NOTE: quadratic work (the old reachability walk) gave a per-node ratio of ~4 here
    assert ratio < 2.0, (t_small, t_big, ratio)


def test_fused_chain_matches_unoptimised():
    fetches = chain_graph(150)
    x = fetches[0].graph.get_tensor_by_name("x:0")
    feed = {x: np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)}
    with graph.Session(x.graph, optimize=True) as s:
        got = s.run(fetches, feed)
        assert s.last_report["fuse"].details["groups"] >= 5
    with graph.Session(x.graph, optimize=False) as s:
        want = s.run(fetches, feed)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)

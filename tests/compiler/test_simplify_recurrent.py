"""Rewrites shaped by a recurrent cell traced from eager code (an LSTM step per row): each is
checked against the unoptimised graph, with the cases where it must not fire."""
import numpy as np

from dualgrad import compiler, eager, graph, ops
from dualgrad.eager import nn
from dualgrad.eager.nn import functional as F

RTOL, ATOL = 2e-5, 2e-5


def _run(g, fetches, feeds, optimize):
    with graph.Session(g, optimize=optimize) as s:
        out = s.run(fetches, feeds)
        return out, s.last_report


def _same(g, fetches, feeds):
    """The optimised results equal the unoptimised ones; the optimiser's report."""
    want, _ = _run(g, fetches, feeds, False)
    got, report = _run(g, fetches, feeds, True)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
    return got, report


def _rewrites(report):
    return report["simplify"].details["rewrites"]


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_a_sum_of_transposes_is_the_transpose_of_the_sum():
    g = graph.Graph()
    with g.as_default():
        xs = [graph.placeholder(graph.float32, (6, 4)) for _ in range(4)]
        total = graph.transpose(xs[0], (1, 0))
        for x in xs[1:]:
            total = total + graph.transpose(x * 2.0, (1, 0))
        prod = graph.transpose(xs[2], (1, 0)) * graph.transpose(xs[3], (1, 0))
    feeds = {x: _rand(6, 4, seed=k) for k, x in enumerate(xs)}
    got, report = _same(g, [total, prod], feeds)
    assert _rewrites(report).get("elementwise_of_transposes") == 4
    assert got[0].shape == (4, 6)
    np.testing.assert_allclose(got[1], (feeds[xs[2]] * feeds[xs[3]]).T, rtol=1e-6)


def _counts(g, fetches, feeds):
    """How many nodes of each op the optimised plan runs (fused groups by their members)."""
    from collections import Counter
    from dualgrad.compiler import optimize
    specs = {p: ops.Spec(v.shape, v.dtype) for p, v in feeds.items()}
    plan, _ = optimize(g, fetches, specs)
    return Counter(st.node.type for st in plan.steps)


def test_a_sum_of_transposed_products_is_one_product():
    """sum over t of (h_t^T g_t)^T, a traced RNN's weight gradient: one gemm over the stacked
    batch dimension (g's and h's stacked, each read in place as a transpose), not a product
    per step and a sum."""
    g = graph.Graph()
    with g.as_default():
        hs = [graph.placeholder(graph.float32, (5, 4)) for _ in range(3)]
        gs = [graph.placeholder(graph.float32, (5, 6)) for _ in range(3)]
        total = sum(graph.transpose(graph.matmul(graph.transpose(h, (1, 0)), d), (1, 0))
                    for h, d in zip(hs, gs))
    feeds = {p: _rand(*p.shape, seed=21 + k) for k, p in enumerate(hs + gs)}
    got, report = _same(g, [total], feeds)
    assert _rewrites(report).get("sum_of_products") == 1
    assert "elementwise_of_transposes" not in _rewrites(report)
    assert _counts(g, [total], feeds)["matmul"] == 1
    want = sum(feeds[d].T @ feeds[h] for h, d in zip(hs, gs))
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-5)


def test_a_sum_of_products_with_mixed_operands_is_one_product():
    """X_t @ Y_t with some X_t and Y_t transposes and some not, inner dims 2, 3 and 4."""
    g = graph.Graph()
    with g.as_default():
        ks = (2, 3, 4)
        xs = [graph.placeholder(graph.float64, (5, k) if t % 2 else (k, 5)) for t, k in
              enumerate(ks)]
        ys = [graph.placeholder(graph.float64, (k, 7) if t != 1 else (7, k)) for t, k in
              enumerate(ks)]
        terms = []
        for t, (x, y) in enumerate(zip(xs, ys)):
            left = x if t % 2 else graph.transpose(x, (1, 0))
            right = graph.transpose(y, (1, 0)) if t == 1 else y
            terms.append(graph.matmul(left, right))
        total = terms[0] + terms[1] + terms[2]
    rng = np.random.default_rng(3)
    feeds = {p: rng.standard_normal(p.shape) for p in xs + ys}
    got, report = _same(g, [total], feeds)
    assert _rewrites(report).get("sum_of_products") == 1
    want = feeds[xs[0]].T @ feeds[ys[0]] + feeds[xs[1]] @ feeds[ys[1]].T + \
        feeds[xs[2]].T @ feeds[ys[2]]
    np.testing.assert_allclose(got[0], want, rtol=1e-12)


def test_sums_of_products_that_must_stay_apart():
    """Not rewritten: a product read elsewhere too, an inner dim above STACK_MAX_K, integer
    products, a term that broadcasts, a sum over 3-D products, terms sharing an operand."""
    from dualgrad.compiler.passes.simplify import STACK_MAX_K
    g = graph.Graph()
    with g.as_default():
        a, b = graph.placeholder(graph.float32, (4, 3)), graph.placeholder(graph.float32, (3, 5))
        c, d = graph.placeholder(graph.float32, (4, 3)), graph.placeholder(graph.float32, (3, 5))
        shared = graph.matmul(a, b)
        read_twice = shared + graph.matmul(c, d) + shared * 2.0
        k = STACK_MAX_K + 1
        wa, wb = graph.placeholder(graph.float32, (2, k)), graph.placeholder(graph.float32, (k, 3))
        wide = graph.matmul(wa, wb) + graph.matmul(wa * 2.0, wb)
        ia, ib = graph.placeholder(graph.int64, (2, 3)), graph.placeholder(graph.int64, (3, 2))
        ints = graph.matmul(ia, ib) + graph.matmul(ia * 2, ib)
        row = graph.placeholder(graph.float32, (1, 3))
        broad = graph.matmul(row, b[:, :3]) + graph.matmul(a, b[:, :3])
        sa, sb = graph.placeholder(graph.float32, (2, 4, 3)), graph.placeholder(graph.float32, (3, 5))
        stacks = graph.matmul(sa, sb) + graph.matmul(sa * 3.0, sb)
        shared_right = graph.matmul(a, b) + graph.matmul(c, b)
    rng = np.random.default_rng(9)
    feeds = {p: (rng.integers(-3, 4, p.shape) if p.dtype == graph.int64 else
                 rng.standard_normal(p.shape).astype(np.float32))
             for p in (a, b, c, d, wa, wb, ia, ib, row, sa, sb)}
    got, report = _same(g, [read_twice, wide, ints, broad, stacks, shared_right], feeds)
    assert "sum_of_products" not in _rewrites(report)
    assert got[2].dtype == np.int64


def test_transposes_that_differ_or_are_read_elsewhere_stay():
    g = graph.Graph()
    with g.as_default():
        a = graph.placeholder(graph.float32, (2, 2, 2))
        b = graph.placeholder(graph.float32, (2, 2, 2))
        c = graph.placeholder(graph.float32, (1, 2, 2))
        other_axes = graph.transpose(a, (2, 1, 0)) + graph.transpose(b, (1, 2, 0))
        shared = graph.transpose(b, (1, 0, 2))
        read_twice = shared + graph.transpose(a, (1, 0, 2))
        also = shared * 3.0
        broadcast = graph.transpose(a, (2, 1, 0)) - graph.transpose(c, (2, 1, 0))
        plain = graph.transpose(a, (2, 1, 0)) + b
    feeds = {a: _rand(2, 2, 2, seed=1), b: _rand(2, 2, 2, seed=2), c: _rand(1, 2, 2, seed=3)}
    _, report = _same(g, [other_axes, read_twice, also, broadcast, plain], feeds)
    assert "elementwise_of_transposes" not in _rewrites(report)


def test_a_product_with_a_zero_constant_is_zeros_only_where_exact():
    """0 @ w is zeros in integers; in floats it is kept (0 * inf is nan): a cell's zero
    initial state times a weight holding an inf or a nan gives what the unoptimised graph
    gives."""
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(graph.float32, (5, 4))
        w = graph.placeholder(graph.float32, (4, 3))
        h0 = graph.constant(np.zeros((5, 4), np.float32))
        z = graph.matmul(h0, w) + graph.matmul(x, w)           # a cell's zero initial state
        dw = graph.gradients(graph.reduce_sum(graph.tanh(z)), [w])[0]
        wi = graph.placeholder(graph.int32, (4, 3))
        zi = graph.matmul(graph.constant(np.zeros((5, 4), np.int32)), wi) + 1
    wv = _rand(4, 3, seed=5)
    wv[1, 2], wv[3, 0] = np.inf, np.nan
    feeds = {x: _rand(5, 4, seed=4), w: wv, wi: np.arange(12, dtype=np.int32).reshape(4, 3)}
    got, report = _same(g, [z, dw, zi], feeds)
    assert _rewrites(report).get("zero_product") == 1       # the integer one only
    assert np.isnan(got[0][:, [0, 2]]).all() and np.isfinite(got[0][:, 1]).all()
    np.testing.assert_array_equal(got[2], np.ones((5, 3), np.int32))


def test_a_zero_gradient_of_a_slice_is_zeros():
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(graph.float32, (3, 8))
        zero = graph.constant(np.zeros((3, 4), np.float32))
        y = ops.slice_grad(zero, x, index=(slice(None), slice(0, 4))) + x
        some = ops.slice_grad(zero + 1.0, x, index=(slice(None), slice(4, 8)))
    feeds = {x: _rand(3, 8, seed=6)}
    got, report = _same(g, [y, some], feeds)
    assert _rewrites(report).get("zero_product") == 1
    np.testing.assert_array_equal(got[0], feeds[x])


def test_equal_gradient_chains_merge_before_simplify_so_bias_sums_merge():
    # b1 + b2 added to every step's pre-activation (an LSTM's bias_ih + bias_hh): the two
    # biases' gradients are equal chains of per-step sums; merged first, they sum once
    g = graph.Graph()
    with g.as_default():
        xs = [graph.placeholder(graph.float32, (4, 3)) for _ in range(3)]
        b1 = graph.placeholder(graph.float32, (3,))
        b2 = graph.placeholder(graph.float32, (3,))
        loss = sum(graph.reduce_sum(graph.tanh(x + (b1 + b2))) for x in xs)
        grads = graph.gradients(loss, [b1, b2])
    feeds = {**{x: _rand(4, 3, seed=7 + k) for k, x in enumerate(xs)},
             b1: _rand(3, seed=11), b2: _rand(3, seed=12)}
    got, report = _same(g, grads, feeds)
    assert _rewrites(report).get("add_of_sums_to_like") == 2
    assert sum(n.name == "sum_to_like" for n in report.program.nodes) == 1
    np.testing.assert_array_equal(got[0], got[1])


def test_optimize_runs_a_subset_of_passes_in_the_listed_order():
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(graph.float32, (3,))
        y = graph.exp(x) + graph.exp(x) + 0.0
    _, report = compiler.optimize(g, [y], {x: ops.Spec((3,), np.dtype("float32"))},
                                  passes=["simplify", "cse"])
    assert [p.name for p in report.passes] == ["cse", "simplify", "cse"]


def _gates(z, c, hidden):
    """An eager LSTM cell's gates over z (B, 4H): one sigmoid, tanh of g's slice."""
    s = graph.sigmoid(z)
    i, f, o = (s[:, k * hidden:(k + 1) * hidden] for k in (0, 1, 3))
    g = graph.tanh(z[:, 2 * hidden:3 * hidden])
    c = f * c + i * g
    return o * graph.tanh(c), c


def test_gate_gradients_become_one_concat_without_zero_filled_arrays():
    g = graph.Graph()
    with g.as_default():
        z = graph.placeholder(graph.float32, (3, 16))
        c0 = graph.placeholder(graph.float32, (3, 4))
        h, c = _gates(z, c0, 4)
        dz = graph.gradients(graph.reduce_sum(h * 1.5 + c), [z])[0]
        h0, _ = _gates(z, graph.constant(np.zeros((3, 4), np.float32)), 4)   # f's is zero
        dz0 = graph.gradients(graph.reduce_sum(h0), [z])[0]
    feeds = {z: _rand(3, 16, seed=14), c0: _rand(3, 4, seed=15)}
    _, report = _same(g, [dz, dz0], feeds)
    rules = _rewrites(report)
    assert rules.get("slice_grads_to_concat") == 2
    assert rules.get("elementwise_of_sparse_concat") == 2
    assert rules.get("slice_grad_into_concat") >= 2
    assert not any(n.name == "slice_grad" for n in report.program.nodes)


def test_concat_rewrites_that_do_not_apply_stay():
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(graph.float32, (3, 8))
        a = graph.placeholder(graph.float32, (3, 2))
        zeros = graph.constant(np.zeros((3, 4), np.float32))
        sparse = graph.concat([a, zeros, a], axis=1)      # exp(0) is 1: no zero part after
        straddle = graph.exp(sparse) + ops.slice_grad(graph.exp(a), x,
                                                      index=(slice(None), slice(1, 3)))
        plain = graph.sigmoid(graph.concat([a, a * 2.0, a, a], axis=1))    # no zero part
        on_part = graph.concat([a * 3.0, a, a, a], axis=1) + \
            ops.slice_grad(a, x, index=(slice(None), slice(2, 4)))
        shared = graph.concat([a * 4.0, zeros, a], axis=1)
        twice = graph.tanh(shared) * 2.0 + shared          # the concat is read twice
    feeds = {x: _rand(3, 8, seed=16), a: _rand(3, 2, seed=17)}
    _, report = _same(g, [straddle, plain, on_part, twice], feeds)
    rules = _rewrites(report)
    # exp(sparse) is pushed through; the slice_grad straddling two of its parts is not
    # merged; on_part's slice_grad over part 1 is
    assert rules.get("slice_grad_into_concat") == 1
    assert rules.get("elementwise_of_sparse_concat") == 1
    assert sum(n.name == "slice_grad" for n in report.program.nodes) == 1


def test_sibling_loops_reading_one_array_fuse_into_one():
    g = graph.Graph()
    with g.as_default():
        a = graph.placeholder(graph.float32, (4, 6))
        w = graph.placeholder(graph.float32, (6, 6))
        one = graph.exp(a) * 2.0
        other = graph.tanh(a) + 1.0                     # reads a too, not one: merged
        after = graph.sigmoid(a) - graph.matmul(one, w)  # depends on one: a cycle if merged
        wide = graph.placeholder(graph.float32, (6,))
        elsewhere = graph.exp(wide) * 3.0               # another domain
    feeds = {a: _rand(4, 6, seed=18), w: _rand(6, 6, seed=19), wide: _rand(6, seed=20)}
    _, report = _same(g, [one, other, after, elsewhere], feeds)
    assert report["fuse"].details["sizes"] == [4, 2, 2]


def _lstm_loss(cell, head, x, y):
    h, c = cell(x[:, 0])
    for t in range(1, x.shape[1]):
        h, c = cell(x[:, t], (h, c))
    return F.cross_entropy(head(h), y)


def test_a_compiled_lstm_loop_matches_eager_with_fewer_products():
    eager.manual_seed(0)
    cell, head = nn.LSTMCell(3, 8), nn.Linear(8, 4)
    x = eager.from_numpy(_rand(5, 6, 3, seed=13))
    y = eager.from_numpy(np.array([0, 1, 2, 3, 1], np.int64))
    params = list(cell.parameters()) + list(head.parameters())
    _lstm_loss(cell, head, x, y).backward()
    want = [p.grad.numpy().copy() for p in params]
    for p in params:
        p.grad = None
    fn = compiler.compile(lambda x, y: _lstm_loss(cell, head, x, y))
    fn(x, y).backward()
    for p, w in zip(params, want):
        np.testing.assert_allclose(p.grad.numpy(), w, rtol=1e-4, atol=1e-6)
    names = [n.name for n in fn.report.program.nodes]
    # 6 steps: x_t @ W_ih^T (6) and h @ W_hh^T (6: the zero state's too, as eager, whose
    # product with a W_hh holding an inf is nan), the head's 1; backward: dh (5), dW_ih (1:
    # the 6 steps' products stacked), dW_hh (1, the 6 stacked), the head's 2
    assert names.count("matmul") == 22
    assert names.count("sum_to_like") <= 2

"""Threads, as TF1 and PyTorch allow them: one Session run from many threads, a default
graph (and session) stack per thread, grad mode per thread, compile(fn) from many threads."""
from __future__ import annotations

import threading

import numpy as np

from dualgrad import compiler, eager, graph

RNG = np.random.default_rng(0)


def in_threads(n, fn):
    """Run fn(i) in n threads at once; re-raise the first error."""
    errors, barrier = [], threading.Barrier(n, timeout=60)

    def body(i):
        try:
            barrier.wait()
            fn(i)
        except BaseException as e:  # noqa: BLE001 - handed to the test's thread
            errors.append(e)
    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_one_session_many_threads_equals_single_threaded():
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(graph.float32, (128, 256))
        w = graph.constant(RNG.normal(0, 0.05, (256, 256)).astype(np.float32))
        h = graph.tanh(x * 2.0 + 1.0) * 0.5          # fused, kept in a plan buffer
        y = graph.exp(graph.matmul(h, w)) - 1.0       # fused, fetched
    feeds = [RNG.normal(0, 1, (128, 256)).astype(np.float32) for _ in range(4)]
    with graph.Session(g) as s:
        want = [s.run(y, {x: f}) for f in feeds]
        assert s.last_report["buffers"].details["buffers"] >= 1
        bad = []

        def work(i):
            for _ in range(60):
                got = s.run(y, {x: feeds[i]})
                if not np.array_equal(got, want[i]):
                    bad.append(i)
        in_threads(4, work)
    assert bad == []


def test_default_graph_stack_is_per_thread():
    graphs = [graph.Graph(), graph.Graph()]
    inside = threading.Barrier(2, timeout=60)
    built = {}

    def work(i):
        with graphs[i].as_default():
            inside.wait()            # both threads are inside their own `with` now
            c = graph.constant(float(i), name=f"c{i}")
            built[i] = (c.graph, graph.get_default_graph())
            inside.wait()
    in_threads(2, work)
    for i in range(2):
        assert built[i] == (graphs[i], graphs[i])
        assert [n.name for n in graphs[i].get_operations()] == [f"c{i}"]


def test_new_thread_starts_at_the_global_default_graph():
    g = graph.Graph()
    seen = []
    with g.as_default():
        t = threading.Thread(target=lambda: seen.append(graph.get_default_graph()))
        t.start()
        t.join()
    assert seen[0] is not g and seen[0] is graph.get_default_graph()


def test_default_session_is_per_thread():
    g = graph.Graph()
    seen = []
    with graph.Session(g):
        t = threading.Thread(target=lambda: seen.append(graph.get_default_session()))
        t.start()
        t.join()
    assert seen == [None]


def test_grad_mode_is_per_thread():
    inside = threading.Barrier(2, timeout=60)
    grads = []

    def work(i):
        if i == 0:
            with eager.no_grad():
                inside.wait()
                inside.wait()        # stay in no_grad while thread 1 trains
            return
        inside.wait()
        w = eager.ones(3, requires_grad=True)
        (w * w).sum().backward()
        grads.append(w.grad.numpy().tolist())
        inside.wait()
    in_threads(2, work)
    assert grads == [[2.0, 2.0, 2.0]]
    assert eager.is_grad_enabled()


def test_compile_from_many_threads():
    @compiler.compile
    def f(x, w):
        return (eager.tanh(x @ w) * 2.0 + 1.0).sum(dim=1)

    w = eager.tensor(RNG.normal(0, 0.3, (16, 8)).astype(np.float32))
    xs = {n: eager.tensor(RNG.normal(0, 1, (n, 16)).astype(np.float32)) for n in (3, 5, 7, 9)}
    want = {n: (np.tanh(x.numpy() @ w.numpy()) * 2 + 1).sum(axis=1) for n, x in xs.items()}
    bad = []

    def work(i):
        n = (3, 5, 7, 9)[i]
        for k in range(40):
            m = n if k % 2 else (3, 5, 7, 9)[(i + 1) % 4]
            got = f(xs[m], w).numpy()
            if not np.allclose(got, want[m], rtol=1e-5, atol=1e-5):
                bad.append(m)
    in_threads(4, work)
    assert bad == []
    assert f.traces == 4


def test_one_iterator_read_from_many_threads_gives_each_element_once():
    g = graph.Graph()
    with g.as_default():
        nxt = graph.data.Dataset.range(3000).map(lambda x: x * 2).make_one_shot_iterator() \
            .get_next()
    got = []
    with graph.Session(g) as s:
        def work(i):
            try:
                while True:
                    got.append(int(s.run(nxt)))
            except graph.errors.OutOfRangeError:
                pass
        in_threads(4, work)
    assert sorted(got) == list(range(0, 6000, 2))

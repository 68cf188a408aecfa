"""`ops.bind` and the per-thread trace stack: which interpreter runs an op call."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from dualgrad import compiler, eager, graph, ops
from dualgrad.eager.core import EagerEngine, Tensor
from dualgrad.ops.core import current_trace, tracing


class Recorder:
    """A toy interpreter: notes each call's op name and runs nothing."""
    level = 1

    def __init__(self):
        self.seen = []

    def apply(self, op, args, attrs):
        self.seen.append(op.name)
        return op.name


def test_without_a_trace_arrays_run_the_kernel():
    out = ops.sum(np.ones(3, np.float32))
    assert not isinstance(out, (Tensor, graph.Tensor)) and out == 3


def test_a_trace_receives_calls_on_arrays_and_eager_tensors():
    rec = Recorder()
    with tracing(rec):
        assert current_trace() is rec
        assert ops.add(np.ones(2), 1.0) == "add"
        assert ops.exp(eager.ones(2)) == "exp"
        assert eager.ones(2) * 2.0 == "mul"   # the operator fast path asks the stack too
        assert -eager.ones(2) == "neg"
        assert 1.0 - eager.ones(2) == "sub"
    assert current_trace() is None
    assert rec.seen == ["add", "exp", "mul", "neg", "sub"]
    assert isinstance(eager.ones(2) * 2.0, Tensor)


def test_an_argument_of_a_higher_level_outranks_the_trace():
    class Low(Recorder):
        level = 0
    g = graph.Graph()
    with g.as_default():
        p = graph.placeholder(graph.float32, (2,))
        rec = Low()
        with tracing(rec):
            out = ops.add(p, 1.0)
    assert isinstance(out, graph.Tensor) and rec.seen == []


def test_graph_functions_always_build_nodes():
    g = graph.Graph()
    with g.as_default():
        s = graph.reduce_sum(np.ones(3, np.float32))
        m = graph.matmul(np.ones((2, 3), np.float32), np.ones((3, 1), np.float32))
        sm = graph.nn.softmax(np.zeros((2, 4), np.float32), name="probs")
    for t in (s, m, sm):
        assert isinstance(t, graph.Tensor) and t.graph is g
    assert sm.name == "probs:0"
    with graph.Session(g) as sess:
        assert sess.run(s) == 3
        np.testing.assert_allclose(sess.run(sm), np.full((2, 4), 0.25))


def test_an_eager_tensor_in_a_graph_function_is_a_clear_error():
    with graph.Graph().as_default():
        with pytest.raises(TypeError, match="cannot be an input of a graph op"):
            graph.reduce_sum(eager.ones(3))


def test_the_trace_stack_is_per_thread():
    """While one thread is inside a trace, another thread's eager ops compute."""
    inside, done = threading.Event(), threading.Event()
    rec = Recorder()

    def traced():
        with tracing(rec):
            inside.set()
            done.wait(10)

    t = threading.Thread(target=traced)
    t.start()
    try:
        assert inside.wait(10)
        a = eager.tensor([1.0, 2.0], requires_grad=True)
        y = (a * a + 1.0 - a).sum()
        y.backward()
        assert float(y) == pytest.approx(4.0)
        np.testing.assert_allclose(a.grad.numpy(), [1.0, 3.0])
        assert a.detach().requires_grad is False
    finally:
        done.set()
        t.join()
    assert rec.seen == []


def test_compile_traces_without_replacing_eager_functions():
    """The tracer is an interpreter on the trace stack: eager's entry points stay as they are."""
    before = (EagerEngine.__dict__["apply"], Tensor.detach, Tensor.__add__)
    seen = []
    w = eager.nn.Parameter(eager.ones(3))

    @compiler.compile
    def f(x):
        seen.append((EagerEngine.__dict__["apply"], Tensor.detach, Tensor.__add__))
        return (x * w.detach() + w * 2.0).sum()

    y = f(eager.ones(3))
    assert f.traces == 1 and seen == [before]
    assert float(y) == 9.0
    w.data[...] = 2.0   # a parameter is read at every call, detached or not
    assert float(f(eager.ones(3))) == 18.0 and f.traces == 1


def test_a_tracer_used_after_its_trace_is_an_error():
    kept = []

    @compiler.compile
    def f(x):
        kept.append(x)
        return x * 2.0

    f(eager.ones(2))
    with pytest.raises(RuntimeError, match="used after its trace ended"):
        ops.exp(kept[0])

"""TensorBoard summaries for graphs, in TF1's words (`tf.compat.v1.summary`).

Summary ops are nodes: each run serialises a `Summary` protocol buffer (TF's `string`
tensor, fetched as `bytes`); `merge_all()` joins every summary of the graph, and a
`FileWriter` writes them, and the graph itself, to an event file TensorBoard reads
(the optional `tensorboard` extra: pip install -e '.[tensorboard]').

>>> import numpy as np, tempfile
>>> from dualgrad import graph
>>> x = graph.placeholder(graph.float32, (None, 3), name="x")
>>> loss = graph.reduce_mean(x ** 2, name="loss")
>>> _ = graph.summary.scalar("loss", loss)
>>> merged = graph.summary.merge_all()
>>> writer = graph.summary.FileWriter(tempfile.mkdtemp(), graph=graph.get_default_graph())
>>> with graph.Session() as sess:
...     writer.add_summary(sess.run(merged, {x: np.ones((2, 3))}), global_step=1)
>>> writer.close()
"""
from __future__ import annotations

import numpy as np

from dualgrad.ops import summary as events
from dualgrad.ops.core import Spec

from .core import (Graph, GraphKeys, Tensor, _graph_of, _lift, get_default_graph, graph_op)

__all__ = ["scalar", "histogram", "merge", "merge_all", "FileWriter"]

STRING = np.dtype(object)   # TF's tf.string: a fetched summary is `bytes`


def _scalar_kernel(node):
    tag = node.attrs["tag"]

    def run(x):
        a = np.asarray(x)
        if a.size != 1:
            raise ValueError(f"summary.scalar {tag!r}: expected a scalar, got shape {a.shape}")
        return _string(events.Summary([events.scalar_value(tag, a.reshape(()))]))
    return run, False


def _histogram_kernel(node):
    tag = node.attrs["tag"]

    def run(x):
        return _string(events.Summary([events.histogram_value(tag, x)]))
    return run, False


def _merge_kernel(node):
    def run(*parts):
        out = events.Summary([])
        for p in parts:
            out.MergeFromString(_bytes(p))
        return _string(out)
    return run, False


SCALAR = graph_op("summary_scalar", _scalar_kernel)
HISTOGRAM = graph_op("summary_histogram", _histogram_kernel)
MERGE = graph_op("summary_merge", _merge_kernel)


def _string(summary):
    """A serialised Summary as a 0-d object array (NOTE: np.asarray(bytes) would make an 'S'
    array, which drops trailing zero bytes and corrupts the protocol buffer)."""
    out = np.empty((), dtype=object)
    out[()] = summary.SerializeToString()
    return out


def _bytes(value) -> bytes:
    """A fetched summary (bytes, or the 0-d array a plan may hold) as bytes."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
    if not isinstance(value, (bytes, np.bytes_)):
        raise TypeError(f"expected a serialised summary (bytes), got {type(value).__name__}")
    return bytes(value)


def _summary(kind, name, tensor, collections, family):
    g = _graph_of([tensor])
    t = _lift(g, tensor, [tensor])
    tag = f"{family}/{name}" if family else str(name)
    node = g.create_node(kind, (t,), {"tag": tag}, [Spec((), STRING)], tag.replace(" ", "_"))
    for key in (collections if collections is not None else [GraphKeys.SUMMARIES]):
        g.add_to_collection(key, node.outputs[0])
    return node.outputs[0]


def scalar(name, tensor, collections=None, family=None) -> Tensor:
    """A summary op holding one scalar value (e.g. the loss), added to
    `GraphKeys.SUMMARIES` (or to `collections`); fetch it, or `merge_all()`."""
    return _summary(SCALAR, name, tensor, collections, family)


def histogram(name, values, collections=None, family=None) -> Tensor:
    """A summary op holding a histogram of `values` (e.g. a weight or an activation)."""
    return _summary(HISTOGRAM, name, values, collections, family)


def merge(inputs, collections=None, name=None) -> Tensor:
    """One summary op that joins the serialised summaries `inputs`."""
    inputs = list(inputs)
    if not inputs:
        raise ValueError("summary.merge: no summaries to merge")
    g = _graph_of(inputs)
    node = g.create_node(MERGE, tuple(_lift(g, t, inputs) for t in inputs), {},
                         [Spec((), STRING)], name or "Merge/MergeSummary")
    for key in collections or ():
        g.add_to_collection(key, node.outputs[0])
    return node.outputs[0]


def merge_all(key=GraphKeys.SUMMARIES, scope=None, name=None):
    """Merge every summary in the default graph's collection `key` (None if there is none),
    as tf.summary.merge_all."""
    found = [t for t in get_default_graph().get_collection(key)
             if scope is None or t.node.name.startswith(scope)]
    return merge(found, name=name) if found else None


class FileWriter:
    """Writes summaries and the graph to an event file in `logdir` (tf.summary.FileWriter).

    `graph=` (or `add_graph`) writes the graph for TensorBoard's Graphs tab;
    `add_summary(sess.run(merged), global_step)` writes the values."""

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, filename_suffix=None):
        self._events = events.EventWriter(logdir, max_queue, flush_secs, filename_suffix or "")
        if graph is not None:
            self.add_graph(graph)

    def get_logdir(self) -> str:
        return self._events.logdir

    def add_summary(self, summary, global_step=None):
        """`summary`: what a summary op returned from `Session.run` (bytes), or a Summary."""
        if not hasattr(summary, "SerializeToString"):
            summary = _bytes(summary)
        self._events.add_summary(summary, step=global_step)

    def add_graph(self, graph):
        if not isinstance(graph, Graph):
            raise TypeError(f"FileWriter.add_graph: expected a graph.Graph, got "
                            f"{type(graph).__name__}")
        self._events.add_graph_def(events.graph_def(graph.get_operations()))

    def flush(self):
        self._events.flush()

    def close(self):
        self._events.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

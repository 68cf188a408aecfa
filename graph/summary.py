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
from .graph_def import GraphDef

__all__ = ["scalar", "histogram", "image", "merge", "merge_all", "FileWriter", "Summary"]

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


def _image_kernel(node):
    tag, n = node.attrs["tag"], node.attrs["max_outputs"]

    def run(x):
        a = np.asarray(x)
        if a.ndim != 4 or a.shape[-1] not in (1, 3, 4):
            raise ValueError(f"summary.image {tag!r}: expected images [batch, height, width, "
                             f"channels] with 1, 3 or 4 channels, got shape {a.shape}")
        tags = [f"{tag}/image"] if n == 1 else [f"{tag}/image/{i}" for i in range(n)]
        return _string(events.Summary([events.image_value(t, _to_uint8(im))
                                       for t, im in zip(tags, a[:n])]))
    return run, False


_BAD_COLOR = np.array([255, 0, 0, 255], np.uint8)   # TF's: non-finite pixels are red


def _to_uint8(image):
    """TF1's per-image normalisation: uint8 as it is; floats scaled so the largest finite
    value is 255 when none is negative, else 0.0 at 128 and the largest magnitude at 1 or
    255 (x * 127 / max|x| + 128), truncated; non-finite pixels the bad colour."""
    if image.dtype == np.uint8:
        return image
    im = image.astype(np.float32)
    finite = np.isfinite(im)
    vals = im[finite]
    lo, hi = (vals.min(), vals.max()) if vals.size else (np.float32(0), np.float32(0))
    if lo >= 0:
        scale, offset = (np.float32(255) / hi if hi > 0 else np.float32(0)), np.float32(0)
    else:
        big = max(abs(lo), abs(hi))
        scale, offset = np.float32(127) / big, np.float32(128)
    out = (np.where(finite, im, 0) * scale + offset).astype(np.uint8)
    bad = ~finite.all(axis=-1)
    out[bad] = _BAD_COLOR[:im.shape[-1]]
    return out


def _merge_kernel(node):
    def run(*parts):
        out = events.Summary([])
        for p in parts:
            out.MergeFromString(_bytes(p))
        return _string(out)
    return run, False


SCALAR = graph_op("summary_scalar", _scalar_kernel)
HISTOGRAM = graph_op("summary_histogram", _histogram_kernel)
IMAGE = graph_op("summary_image", _image_kernel)
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


def _summary(kind, name, tensor, collections, family, **attrs):
    g = _graph_of([tensor])
    t = _lift(g, tensor, [tensor])
    tag = f"{family}/{name}" if family else str(name)
    node = g.create_node(kind, (t,), {"tag": tag, **attrs}, [Spec((), STRING)],
                         tag.replace(" ", "_"))
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


def image(name, tensor, max_outputs=3, collections=None, family=None) -> Tensor:
    """A summary op holding up to max_outputs images of a [batch, height, width, channels]
    tensor (1, 3 or 4 channels) as PNGs, tagged 'name/image/0', ... ('name/image' when
    max_outputs is 1); floats are normalised per image as TF1's (see _to_uint8)."""
    if max_outputs < 1:
        raise ValueError(f"summary.image: max_outputs must be at least 1, got {max_outputs}")
    return _summary(IMAGE, name, tensor, collections, family, max_outputs=int(max_outputs))


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


class _ProtoClass(type):
    def __getattr__(cls, name):   # Summary.Value, Summary.Image, ...: the protocol buffer's
        return getattr(events.Summary_class(), name)

    def __instancecheck__(cls, obj):
        return isinstance(obj, events.Summary_class())


class Summary(metaclass=_ProtoClass):
    """tf.Summary: TensorBoard's Summary protocol buffer (`Summary(value=[Summary.Value(
    tag=, simple_value=)])` for a value computed in Python, `ParseFromString` to read a
    fetched summary); FileWriter.add_summary takes it."""

    def __new__(cls, *args, **kwargs):
        return events.Summary_class()(*args, **kwargs)

    @staticmethod
    def Value(**fields):  # noqa: N802 - the protocol buffer's name
        """Summary.Value(tag=, simple_value= | image= | histo= ...)."""
        return events.Summary_class().Value(**fields)


class FileWriter:
    """Writes summaries and the graph to an event file in `logdir` (tf.summary.FileWriter).

    `graph=` (or `add_graph`) writes the graph for TensorBoard's Graphs tab, `graph_def=`
    a GraphDef as it is; `add_summary(sess.run(merged), global_step)` writes the values."""

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, filename_suffix=None,
                 graph_def=None):
        self._events = events.EventWriter(logdir, max_queue, flush_secs, filename_suffix or "")
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def get_logdir(self) -> str:
        return self._events.logdir

    def add_summary(self, summary, global_step=None):
        """`summary`: what a summary op returned from `Session.run` (bytes), or a Summary."""
        if not hasattr(summary, "SerializeToString"):
            summary = _bytes(summary)
        self._events.add_summary(summary, step=global_step)

    def add_graph(self, graph, global_step=None, graph_def=None):
        if graph is None and isinstance(graph_def, GraphDef):   # NOTE: TF's bytes, as given
            self._events.add_graph_def(graph_def)
            return
        if not isinstance(graph, Graph):
            raise TypeError(f"FileWriter.add_graph: expected a graph.Graph (or graph_def= a "
                            f"GraphDef), got {type(graph).__name__}")
        self._events.add_graph_def(events.graph_def(graph.get_operations()))

    def flush(self):
        self._events.flush()

    def close(self):
        self._events.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

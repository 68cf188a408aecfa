"""TF1's readers: `TextLineReader`, `TFRecordReader`, `WholeFileReader`.

`reader.read(filename_queue)` gives `(key, value)`, two scalar string tensors (bytes). Each
run yields the next record of the file the reader is on; at the end of a file the reader
takes the next file name from the queue (waiting for one, as TF's readers do), and once that
queue is closed and empty, `read` raises `errors.OutOfRangeError`. Keys are TF's:
`b"file:line"` (lines counted from 1, skipped header lines included), `b"file:offset"` for
TFRecords (the record's byte offset), the file name for whole files. A reader's position
lives in each Session that runs it; runs from several threads take turns.

>>> import os, tempfile
>>> from dualgrad import graph as tf
>>> path = os.path.join(tempfile.mkdtemp(), "a.csv")
>>> with open(path, "w") as f:
...     _ = f.write("x,y\\n1,2\\n3,4\\n")
>>> files = tf.train.string_input_producer([path], num_epochs=1, shuffle=False)
>>> key, line = tf.TextLineReader(skip_header_lines=1).read(files)
>>> with tf.Session() as sess:
...     sess.run(tf.local_variables_initializer())
...     coord = tf.train.Coordinator()
...     threads = tf.train.start_queue_runners(sess, coord)
...     k, v = sess.run([key, line])
...     print(k.endswith(b"a.csv:2"), v, sess.run(line))
...     coord.request_stop(); coord.join(threads)
True b'1,2' b'3,4'
"""
from __future__ import annotations

import os
import struct
import threading
from collections import namedtuple

import numpy as np

from dualgrad.ops.core import Spec, user_frame, where_str

from .core import get_default_graph, graph_op
from .dtypes import int64, string
from .errors import NotFoundError, describe
from .queues import QueueBase, store_of

__all__ = ["ReaderBase", "TextLineReader", "TFRecordReader", "WholeFileReader",
           "FixedLengthRecordReader"]

ReaderReadResult = namedtuple("ReaderReadResult", ["key", "value"])   # TF's (key, value)


class _Position:
    """Where one reader is in one Session: the records left of its current file."""

    def __init__(self):
        self.lock = threading.Lock()
        self.records = None
        self.produced = self.completed = 0


def _position(state, reader):
    with state.lock:
        return state.resources.setdefault(reader, _Position())


def _open(reader, name, node):
    path = os.fsdecode(name)
    if not os.path.exists(path):
        raise NotFoundError(f"{path}: No such file or directory (read by {describe(node)})",
                            node=node)
    return reader._records(path, name)


def _next_records(state, reader, queue, node, n):
    """Up to n (key, value) pairs: the current file's, else the next file's (at least one)."""
    pos = _position(state, reader)
    out = []
    with pos.lock:
        while len(out) < n:
            if pos.records is None:
                if out:
                    break
                work = np.asarray(store_of(state, queue).take(1, False, node)[0][0]).item()
                pos.records = _open(reader, work if isinstance(work, bytes) else
                                    str(work).encode(), node)
            rec = next(pos.records, None)
            if rec is None:
                pos.records = None
                pos.completed += 1
                continue
            pos.produced += 1
            out.append(rec)
    return out


def _read_kernel(node):
    reader, queue = node.attrs["reader"], node.attrs["queue"]

    def run(state):
        (key, value), = _next_records(state, reader, queue, node, 1)
        return np.asarray(key, dtype=object), np.asarray(value, dtype=object)
    return run, True


def _read_up_to_kernel(node):
    reader, queue, n = node.attrs["reader"], node.attrs["queue"], node.attrs["n"]

    def run(state):
        recs = _next_records(state, reader, queue, node, n)
        keys, values = np.empty(len(recs), object), np.empty(len(recs), object)
        for i, (k, v) in enumerate(recs):
            keys[i], values[i] = k, v
        return keys, values
    return run, True


def _query_kernel(node):
    reader, what = node.attrs["reader"], node.attrs["what"]

    def run(state):
        pos = _position(state, reader)
        with pos.lock:
            if what == "reset":
                pos.records, pos.produced, pos.completed = None, 0, 0
                return None
            return np.array(getattr(pos, what), np.int64)
    return run, True


READ = graph_op("reader_read", _read_kernel)
READ_UP_TO = graph_op("reader_read_up_to", _read_up_to_kernel)
QUERY = graph_op("reader_query", _query_kernel)


class ReaderBase:
    """What TF1's readers share: `read(queue)`, `read_up_to(queue, num_records)`,
    `num_records_produced()`, `num_work_units_completed()`, `reset()`."""
    runtime_object = True   # NOTE: graph.save writes a marker graph.load refuses
    supports_serialize = False

    def __init__(self, name):
        self._graph = get_default_graph()
        self.name = self._graph.unique_name(name)

    def __repr__(self):
        return f"<graph.{type(self).__name__} '{self.name}'>"

    def _records(self, path, name):
        raise NotImplementedError

    def _check_queue(self, queue, what):
        if not isinstance(queue, QueueBase):
            raise TypeError(f"{type(self).__name__}.{what} (at {where_str(user_frame())}): "
                            f"needs the queue of file names (e.g. "
                            f"tf.train.string_input_producer(files)), got {queue!r}")
        if queue.dtypes[0] != string:
            raise TypeError(f"{type(self).__name__}.{what}: queue '{queue.name}' holds "
                            f"{queue.dtypes[0].name}, not the file names (strings) a reader "
                            f"takes")

    def read(self, queue, name=None):
        """(key, value): the next record, as two scalar string tensors."""
        self._check_queue(queue, "read")
        node = self._graph.create_node(READ, (), {"reader": self, "queue": queue},
                                       [Spec((), string), Spec((), string)],
                                       name or "ReaderRead")
        return ReaderReadResult(*node.outputs)

    def read_up_to(self, queue, num_records, name=None):
        """(keys, values): up to num_records records (fewer at the end of a file)."""
        self._check_queue(queue, "read_up_to")
        n = int(num_records)
        if n < 1:
            raise ValueError(f"read_up_to: num_records must be at least 1, got {num_records}")
        node = self._graph.create_node(READ_UP_TO, (), {"reader": self, "queue": queue, "n": n},
                                       [Spec((None,), string), Spec((None,), string)],
                                       name or "ReaderReadUpTo")
        return ReaderReadResult(*node.outputs)

    def _query(self, what, name, specs):
        return self._graph.create_node(QUERY, (), {"reader": self, "what": what}, specs, name)

    def num_records_produced(self, name=None):
        return self._query("produced", name or "ReaderNumRecordsProduced",
                           [Spec((), int64)]).outputs[0]

    def num_work_units_completed(self, name=None):
        return self._query("completed", name or "ReaderNumWorkUnitsCompleted",
                           [Spec((), int64)]).outputs[0]

    def reset(self, name=None):
        return self._query("reset", name or "ReaderReset", [])


class TextLineReader(ReaderBase):
    """The lines of text files, without their line endings; `skip_header_lines` lines are
    skipped at the start of each file."""

    def __init__(self, skip_header_lines=None, name=None):
        super().__init__(name or "TextLineReader")
        self.skip_header_lines = int(skip_header_lines or 0)

    def _records(self, path, name):
        skip = self.skip_header_lines
        with open(path, "rb") as f:
            for number, line in enumerate(f, 1):
                if number > skip:
                    line = line[:-1] if line.endswith(b"\n") else line
                    yield b"%s:%d" % (name, number), \
                        line[:-1] if line.endswith(b"\r") else line


class TFRecordReader(ReaderBase):
    """The records of TFRecord files (CRCs checked); keys are `file:offset`."""

    def __init__(self, name=None, options=None):
        if options is not None and getattr(options, "compression_type", None) not in (None, 0, ""):
            raise NotImplementedError("TFRecordReader: compressed records are not supported")
        super().__init__(name or "TFRecordReader")

    def _records(self, path, name):
        from .io import tf_record_iterator
        offset = 0
        for rec in tf_record_iterator(path):
            yield b"%s:%d" % (name, offset), rec
            offset += len(rec) + struct.calcsize("<QII")


class WholeFileReader(ReaderBase):
    """Each file whole: the key is its name, the value its bytes."""

    def __init__(self, name=None):
        super().__init__(name or "WholeFileReader")

    def _records(self, path, name):
        with open(path, "rb") as f:
            data = f.read()
        yield name, data


class FixedLengthRecordReader(ReaderBase):
    """Records of `record_bytes` bytes, between `header_bytes` at the start of each file and
    `footer_bytes` at its end, starting every `hop_bytes` (default: record_bytes); a last
    record cut short is dropped. Keys are `file:record number`."""

    def __init__(self, record_bytes, header_bytes=None, footer_bytes=None, hop_bytes=None,
                 name=None, encoding=None):
        if encoding:
            raise NotImplementedError("FixedLengthRecordReader(encoding=...): compressed "
                                      "files are not supported")
        super().__init__(name or "FixedLengthRecordReader")
        self.record_bytes = int(record_bytes)
        if self.record_bytes < 1:
            raise ValueError(f"FixedLengthRecordReader: record_bytes must be positive, got "
                             f"{record_bytes}")
        self.header_bytes, self.footer_bytes = int(header_bytes or 0), int(footer_bytes or 0)
        self.hop_bytes = int(hop_bytes or 0) or self.record_bytes

    def _records(self, path, name):
        with open(path, "rb") as f:
            data = f.read()
        end = len(data) - self.footer_bytes
        start, number = self.header_bytes, 0
        while start + self.record_bytes <= end:
            yield b"%s:%d" % (name, number), data[start:start + self.record_bytes]
            start += self.hop_bytes
            number += 1

"""TF1's lookup tables (`tf.contrib.lookup`, `tensorflow.python.ops.lookup_ops`): a vocabulary
mapped to ids and back, each table's contents living in the Session that ran its
initializer (`tf.tables_initializer()`), as TF's.

`index_table_from_tensor` / `_from_file` map keys (strings, or int64) to their position in
the vocabulary, `default_value` (-1) for the rest; `index_to_string_table_from_*` map ids
back ("UNK" for ids outside it). Out-of-vocabulary buckets (`num_oov_buckets > 0`) hash the
key with TF's FarmHash Fingerprint64, which dualgrad does not carry: they raise
NotImplementedError rather than give other ids.

>>> from dualgrad import graph as tf
>>> table = tf.contrib.lookup.index_table_from_tensor(["emerson", "lake", "palmer"])
>>> ids = table.lookup(tf.constant(["emerson", "lake", "and", "palmer"]))
>>> with tf.Session() as sess:
...     sess.run(tf.tables_initializer())
...     sess.run(ids).tolist()
[0, 1, -1, 2]
"""
from __future__ import annotations

import numpy as np

from dualgrad.ops.core import Spec

from .augment import _node
from .control_flow import group, no_op
from .core import (GraphKeys, add_to_collection, convert_to_tensor, get_collection,
                   get_default_graph, graph_op)
from .dtypes import int64, string
from .errors import FailedPreconditionError, InvalidArgumentError, NotFoundError

__all__ = ["index_table_from_tensor", "index_table_from_file", "index_to_string_table_from_tensor",
           "index_to_string_table_from_file", "tables_initializer", "TextFileIndex"]


class TextFileIndex:
    """Which part of a vocabulary file's line is a key or a value."""
    WHOLE_LINE = -2
    LINE_NUMBER = -1


def _as_key(x):
    return x.encode() if isinstance(x, str) else bytes(x) if isinstance(x, bytes) else int(x)


class _Table:
    """A lookup table: its key and value dtypes and its default; the contents are per
    Session, written by the initializer node."""

    def __init__(self, name, key_dtype, value_dtype, default_value):
        self.name, self.key_dtype, self.value_dtype = name, key_dtype, value_dtype
        self.default_value = default_value
        self.initializer = None

    def _contents(self, state, node):
        with state.lock:
            found = state.resources.get(("table", self))
        if found is None:
            raise FailedPreconditionError(f"Table not initialized. (table '{self.name}', "
                                          f"node '{node.name}': run tf.tables_initializer() "
                                          f"first)", node)
        return found

    def lookup(self, keys, name=None):
        """The value of each key (default_value where the table has none), keys' shape."""
        keys = convert_to_tensor(keys)
        if np.dtype(keys.dtype) != np.dtype(self.key_dtype):
            raise TypeError(f"lookup: the table's keys are {np.dtype(self.key_dtype)}, got "
                            f"{np.dtype(keys.dtype)} ('{keys.name}')")
        return _node(LOOKUP, [keys], {"table": self},
                     [Spec(tuple(keys.shape), np.dtype(self.value_dtype))],
                     name or f"{self.name}_Lookup")[0]

    def size(self, name=None):
        return _node(SIZE, [], {"table": self}, [Spec((), np.dtype(np.int64))],
                     name or f"{self.name}_Size")[0]


def _init_kernel(node):
    table, load = node.attrs["table"], node.attrs["load"]

    def run(state):
        keys, values = load(node)
        contents = {}
        for k, v in zip(keys, values):
            if k in contents and contents[k] != v:
                raise InvalidArgumentError(f"HashTable has different value for same key. Key "
                                           f"{_shown(k)} has {_shown(contents[k])} and trying "
                                           f"to add value {_shown(v)} (node '{node.name}')",
                                           node)
            contents[k] = v
        with state.lock:
            state.resources[("table", table)] = contents
    return run, True


def _shown(x):
    return x.decode(errors="replace") if isinstance(x, bytes) else x


def _lookup_kernel(node):
    table = node.attrs["table"]

    def run(state, keys):
        contents = table._contents(state, node)
        flat = [contents.get(_as_key(k), table.default_value) for k in np.ravel(keys)]
        return np.array(flat, dtype=table.value_dtype).reshape(np.shape(keys))
    return run, True


def _size_kernel(node):
    table = node.attrs["table"]

    def run(state):
        return np.array(len(table._contents(state, node)), np.int64)
    return run, True


INIT = graph_op("lookup_table_init", _init_kernel)
LOOKUP = graph_op("lookup_table_find", _lookup_kernel)
SIZE = graph_op("lookup_table_size", _size_kernel)


def _table(name, kind, load, key_dtype, value_dtype, default_value):
    """A table whose initializer fills it with load(node) -> (keys, values)."""
    table = _Table(name or kind, key_dtype, value_dtype, default_value)
    table.initializer = get_default_graph().create_node(INIT, (), {"table": table, "load": load},
                                                        [], f"{table.name}_init")
    add_to_collection(GraphKeys.TABLE_INITIALIZERS, table.initializer)
    return table


def _vocabulary(vocabulary_list, dtype):
    if hasattr(vocabulary_list, "graph"):
        raise NotImplementedError("a vocabulary computed in the graph: dualgrad's tables take "
                                  "a Python list or array (as TF's constant vocabularies)")
    vocab = [_as_key(v) for v in np.ravel(np.asarray(vocabulary_list, dtype=object))]
    if np.dtype(dtype) == np.dtype(int64):
        vocab = [int(v) for v in vocab]
    return vocab


def _no_buckets(num_oov_buckets):
    if num_oov_buckets:
        raise NotImplementedError(
            "num_oov_buckets > 0: TF hashes out-of-vocabulary keys with FarmHash Fingerprint64, "
            "which dualgrad does not carry; map them to default_value (num_oov_buckets=0)")


def index_table_from_tensor(vocabulary_list, num_oov_buckets=0, vocab_size=None,
                            default_value=-1, hasher_spec=None, dtype=string, name=None):
    """Keys -> their index in vocabulary_list (int64), default_value for the others."""
    _no_buckets(num_oov_buckets)
    vocab = _vocabulary(vocabulary_list, dtype)
    return _table(name, "string_to_index", lambda node: (vocab, list(range(len(vocab)))), dtype,
                  np.int64, default_value)


def index_to_string_table_from_tensor(vocabulary_list, default_value="UNK", name=None):
    """int64 ids -> the vocabulary's entries, default_value for ids outside it."""
    vocab = _vocabulary(vocabulary_list, string)
    return _table(name, "index_to_string", lambda node: (list(range(len(vocab))), vocab),
                  np.int64, np.dtype(object), default_value.encode() if isinstance(default_value, str)
                  else default_value)


def _read_lines(path, vocab_size, delimiter, column, node):
    try:
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")
    except OSError as e:
        raise NotFoundError(f"{path}; {e.strerror} (node '{node.name}')", node) from None
    if lines and lines[-1] == b"":
        lines.pop()
    lines = lines[:vocab_size] if vocab_size is not None else lines
    if column == TextFileIndex.WHOLE_LINE:
        return lines
    return [line.split(delimiter.encode())[column] for line in lines]


def index_table_from_file(vocabulary_file=None, num_oov_buckets=0, vocab_size=None,
                          default_value=-1, hasher_spec=None, key_dtype=string, name=None,
                          key_column_index=TextFileIndex.WHOLE_LINE,
                          value_column_index=TextFileIndex.LINE_NUMBER, delimiter="\t"):
    """index_table_from_tensor over a vocabulary file, one key per line (or the
    key_column_index'th field), read when the initializer runs."""
    _no_buckets(num_oov_buckets)
    if value_column_index != TextFileIndex.LINE_NUMBER:
        raise NotImplementedError("index_table_from_file: values other than line numbers")
    ints = np.dtype(key_dtype) == np.dtype(int64)

    def load(node):
        keys = _read_lines(vocabulary_file, vocab_size, delimiter, key_column_index, node)
        keys = [int(k) for k in keys] if ints else keys
        return keys, list(range(len(keys)))
    return _table(name, "string_to_index", load, key_dtype, np.int64, default_value)


def index_to_string_table_from_file(vocabulary_file, vocab_size=None, default_value="UNK",
                                    name=None, key_column_index=TextFileIndex.LINE_NUMBER,
                                    value_column_index=TextFileIndex.WHOLE_LINE,
                                    delimiter="\t"):
    """index_to_string_table_from_tensor over a vocabulary file, one entry per line."""
    if key_column_index != TextFileIndex.LINE_NUMBER:
        raise NotImplementedError("index_to_string_table_from_file: keys other than line "
                                  "numbers")
    def load(node):
        values = _read_lines(vocabulary_file, vocab_size, delimiter, value_column_index, node)
        return list(range(len(values))), values
    return _table(name, "index_to_string", load, np.int64,
                  np.dtype(object), default_value.encode() if isinstance(default_value, str)
                  else default_value)


def tables_initializer(name="init_all_tables"):
    """One op that runs every table's initializer (TF1's tf.tables_initializer)."""
    inits = get_collection(GraphKeys.TABLE_INITIALIZERS)
    return group(*inits, name=name) if inits else no_op(name=name)

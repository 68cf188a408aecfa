"""Vocabulary lookup tables and tf.nest against real TensorFlow: the same tables built from
lists and files, looked up in both, the same errors; nest's flatten / pack / map and its
structure checks with TF's messages."""
import collections

import numpy as np
import pytest

from dualgrad import graph as dg

tensorflow = pytest.importorskip("tensorflow")
tf = tensorflow.compat.v1
tf_lookup = pytest.importorskip("tensorflow.python.ops.lookup_ops")

WORDS = ["the", "quick", "brown", "fox"]


def _ours(build, feed_keys):
    g = dg.Graph()
    with g.as_default():
        keys = dg.placeholder(dg.string if isinstance(feed_keys[0], str) else dg.int64, [None])
        out = build(dg.python.ops.lookup_ops, keys)
        with dg.Session(graph=g) as sess:
            sess.run(dg.tables_initializer())
            return sess.run(out, {keys: feed_keys})


def _theirs(build, feed_keys):
    g = tf.Graph()
    with g.as_default():
        keys = tf.placeholder(tf.string if isinstance(feed_keys[0], str) else tf.int64, [None])
        out = build(tf_lookup, keys)
        with tf.Session(graph=g) as sess:
            sess.run(tf.tables_initializer())
            return sess.run(out, {keys: feed_keys})


@pytest.fixture
def vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("".join(w + "\n" for w in WORDS))
    return str(path)


CASES = {
    "ids": (lambda L, k: L.index_table_from_tensor(WORDS).lookup(k),
            ["fox", "the", "jumps", "quick"]),
    "ids default": (lambda L, k: L.index_table_from_tensor(WORDS, default_value=7).lookup(k),
                    ["jumps", "brown"]),
    "int keys": (lambda L, k: L.index_table_from_tensor([10, 20, 30], dtype=tf.int64
                                                        if L is tf_lookup else dg.int64)
                 .lookup(k), [30, 5, 10]),
    "words": (lambda L, k: L.index_to_string_table_from_tensor(WORDS).lookup(k), [3, 0, 9, -1]),
    "words default": (lambda L, k: L.index_to_string_table_from_tensor(WORDS, "?").lookup(k),
                      [1, 4]),
    "size": (lambda L, k: L.index_table_from_tensor(WORDS).size(), ["x"]),
}


@pytest.mark.parametrize("case", CASES)
def test_tables_from_lists_agree_with_tf(case):
    build, keys = CASES[case]
    got, want = _ours(build, keys), _theirs(build, keys)
    assert np.asarray(got).tolist() == np.asarray(want).tolist()
    assert np.asarray(got).dtype == np.asarray(want).dtype


def test_tables_from_files_agree_with_tf(vocab_file):
    for build, keys in [(lambda L, k: L.index_table_from_file(vocab_file).lookup(k),
                         ["brown", "cow", "the"]),
                        (lambda L, k: L.index_table_from_file(vocab_file, vocab_size=2)
                         .lookup(k), ["brown", "quick"]),
                        (lambda L, k: L.index_to_string_table_from_file(vocab_file).lookup(k),
                         [2, 7])]:
        assert np.asarray(_ours(build, keys)).tolist() == np.asarray(_theirs(build, keys)).tolist()


def test_uninitialised_table_duplicate_keys_and_buckets_are_errors():
    table = dg.python.ops.lookup_ops.index_table_from_tensor(WORDS)
    ids = table.lookup(dg.constant(["fox"]))
    with dg.Session() as sess, pytest.raises(dg.errors.FailedPreconditionError,
                                             match="Table not initialized"):
        sess.run(ids)
    dup = dg.contrib.lookup.index_table_from_tensor(["a", "b", "a"])
    with dg.Session() as sess, pytest.raises(dg.errors.InvalidArgumentError,
                                             match="different value for same key"):
        sess.run(dup.initializer)
    with pytest.raises(NotImplementedError, match="FarmHash"):
        dg.contrib.lookup.index_table_from_tensor(WORDS, num_oov_buckets=2)


Point = collections.namedtuple("Point", "x y")
STRUCTURES = [{"b": 1, "a": [2, (3, None)]}, None, "ab", Point(1, [2, 3]), [[], {}, ()],
              np.ones(2)]


@pytest.mark.parametrize("s", STRUCTURES, ids=range(len(STRUCTURES)))
def test_nest_flatten_pack_and_map_agree_with_tf(s):
    n = tensorflow.nest
    assert repr(dg.nest.flatten(s)) == repr(n.flatten(s))
    flat = list(range(len(n.flatten(s))))
    assert repr(dg.nest.pack_sequence_as(s, flat)) == repr(n.pack_sequence_as(s, flat))
    assert repr(dg.nest.map_structure(lambda x: (x,), s)) == \
        repr(n.map_structure(lambda x: (x,), s))
    assert dg.contrib.framework.nest.is_sequence(s) == n.is_nested(s)


@pytest.mark.parametrize("a,b,kw", [([1, 2], [1], {}), ([1, 2], (1, 2), {}),
                                    ([1, 2], (1, 2), {"check_types": False}),
                                    ({"a": 1}, {"b": 1}, {}), (1, [1], {}),
                                    ([1, [2]], [1, 2], {}), (Point(1, 2), (1, 2), {}),
                                    ({"a": [1, (2,)]}, {"a": [5, (6,)]}, {})])
def test_assert_same_structure_agrees_with_tf(a, b, kw):
    def outcome(fn):
        try:
            fn(a, b, **kw)
            return "ok"
        except (TypeError, ValueError) as e:
            return f"{type(e).__name__}: {e}"
    assert outcome(dg.nest.assert_same_structure) == \
        outcome(tensorflow.nest.assert_same_structure)

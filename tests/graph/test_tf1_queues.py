"""TF1's queue-based input pipelines (graph/queues.py, readers.py, input_pipeline.py,
coordinator.py) against real tf.compat.v1: the same pipeline in both gives the same values
in the same order where TF's order is fixed (FIFO, shuffle=False, one thread) and the same
multiset where it shuffles; the end of num_epochs is OutOfRangeError in both."""
from __future__ import annotations

import threading
from collections import Counter

import numpy as np
import pytest

from dualgrad import graph

from .tf_oracle import load_tf

pytestmark = [pytest.mark.usefixtures("hang_guard"), pytest.mark.hang_guard(60)]


@pytest.fixture(scope="module")
def tf1():
    pytest.importorskip("tensorflow")
    return load_tf().compat.v1


def drain(tfm, build, limit=500):
    """Build in a fresh graph of module `tfm` (tf.compat.v1 or dualgrad.graph), start the
    queue runners, run the fetches until OutOfRangeError: (values, threads' names)."""
    g = tfm.Graph()
    with g.as_default():
        fetch = build(tfm)
        init = [tfm.global_variables_initializer(), tfm.local_variables_initializer()]
    out = []
    # NOTE: TF waits in C, where hang_guard's alarm cannot reach: its own deadline ends a
    # wait that would hang (dualgrad accepts the option and waits where signals reach it)
    deadline = tfm.RunOptions(timeout_in_ms=30_000)
    with tfm.Session(graph=g) as sess:
        sess.run(init)
        coord = tfm.train.Coordinator()
        threads = tfm.train.start_queue_runners(sess, coord)
        try:
            while not coord.should_stop() and len(out) < limit:
                out.append(sess.run(fetch, options=deadline))
        except tfm.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
    assert len(out) < limit, "the pipeline did not end"
    return out, sorted(t.name for t in threads)


def same(a, b):
    assert len(a) == len(b), (a, b)
    for x, y in zip(a, b):
        if x is None or y is None:   # an op's result
            assert x is None and y is None, (x, y)
        elif isinstance(x, (list, tuple)):
            same(x, y)
        elif isinstance(x, dict):
            assert sorted(x) == sorted(y)
            same([x[k] for k in sorted(x)], [y[k] for k in sorted(y)])
        else:
            x, y = np.asarray(x), np.asarray(y)
            assert x.shape == y.shape and x.dtype.kind == y.dtype.kind or \
                x.dtype == object and y.dtype.kind == "S", (x, y)
            assert x.tolist() == y.tolist(), (x, y)
            if x.dtype == object:   # strings are bytes, as TF gives them (not 0-d arrays)
                assert all(type(e) is bytes for e in x.flat), x


@pytest.fixture
def files(tmp_path):
    (tmp_path / "a.csv").write_bytes(b"x,y\n1,2\n3,4\n\n5,6")
    (tmp_path / "b.csv").write_bytes(b"x,y\r\n7,8\r\n")
    return [str(tmp_path / "a.csv"), str(tmp_path / "b.csv")]


def test_text_lines_keys_and_epochs_as_tf(tf1, files):
    def build(tf):
        q = tf.train.string_input_producer(files, num_epochs=2, shuffle=False)
        return list(tf.TextLineReader(skip_header_lines=1).read(q))
    want, tf_threads = drain(tf1, build)
    got, threads = drain(graph, build)
    same(got, want)
    assert got[0][0] == f"{files[0]}:2".encode() and len(got) == 2 * 5
    assert threads == tf_threads   # TF's thread names: QueueRunnerThread-queue-op


def test_csv_through_batch_in_order_as_tf(tf1, tmp_path):
    (tmp_path / "c.csv").write_bytes(b"x,y\n1.5,2\n3,4\n5,6\n")
    (tmp_path / "d.csv").write_bytes(b"x,y\n7,8\n9,10\n")
    files = [str(tmp_path / "c.csv"), str(tmp_path / "d.csv")]

    def build(tf):
        q = tf.train.string_input_producer(files, num_epochs=3, shuffle=False)
        _, line = tf.TextLineReader(skip_header_lines=1).read(q)
        x, y = tf.decode_csv(line, record_defaults=[[0.0], [0]])
        return tf.train.batch([x, y, line], batch_size=4, allow_smaller_final_batch=True)
    want, _ = drain(tf1, build)
    got, _ = drain(graph, build)
    same(got, want)
    assert [len(b[0]) for b in got] == [4, 4, 4, 3]   # 15 rows: the last batch is smaller


def test_tfrecords_and_whole_files_as_tf(tf1, files, tmp_path):
    path = str(tmp_path / "r.tfrecord")
    with tf1.python_io.TFRecordWriter(path) as w:
        for rec in (b"one", b"", b"three" * 40):
            w.write(rec)

    def build(tf):
        rq = tf.train.string_input_producer([path], num_epochs=1, shuffle=False)
        wq = tf.train.string_input_producer(files, num_epochs=1, shuffle=False)
        return [tf.TFRecordReader().read(rq), tf.WholeFileReader().read(wq)]
    want, _ = drain(tf1, build)
    got, _ = drain(graph, build)
    same(got, want)
    assert got[1][0][0] == f"{path}:19".encode()   # a record's key is its byte offset


def test_fixed_length_records_as_tf(tf1, tmp_path):
    path = str(tmp_path / "r.bin")
    with open(path, "wb") as f:
        f.write(b"HHabcdefghijFF")

    def build(tf):
        q = tf.train.string_input_producer([path], num_epochs=2, shuffle=False)
        plain = tf.FixedLengthRecordReader(3, header_bytes=2, footer_bytes=2).read(q)
        q2 = tf.train.string_input_producer([path], num_epochs=1, shuffle=False)
        return [plain, tf.FixedLengthRecordReader(4, hop_bytes=3).read(q2)]
    want, _ = drain(tf1, build)
    got, _ = drain(graph, build)
    same(got, want)
    assert got[0][0].key == f"{path}:0".encode()   # TF's namedtuple (key, value)


def test_dynamic_pad_batches_as_tf(tf1, tmp_path):
    (tmp_path / "t.txt").write_bytes(b"ab\ncde\nf\nghij\nkl\n")
    path = str(tmp_path / "t.txt")

    def build(tf):
        q = tf.train.string_input_producer([path], num_epochs=1, shuffle=False)
        _, line = tf.TextLineReader().read(q)
        codes = tf.decode_raw(line, tf.uint8)
        return tf.train.batch([codes, line], batch_size=2, dynamic_pad=True,
                              allow_smaller_final_batch=True)
    want, _ = drain(tf1, build)
    got, _ = drain(graph, build)
    same(got, want)
    assert got[0][0].tolist() == [[97, 98, 0], [99, 100, 101]]   # padded per batch
    assert got[0][1].tolist() == [b"ab", b"cde"]   # strings, not arrays of them
    with tf1.Graph().as_default():   # NOTE: built eagerly, TF's dequeue would run and wait
        pq = tf1.PaddingFIFOQueue(3, [tf1.string], shapes=[[None]])
        want_shape = tuple(pq.dequeue_many(2).shape.as_list())
    mine = graph.queue.PaddingFIFOQueue(3, [graph.string], shapes=[[None]])
    assert mine.dequeue_many(2).shape == want_shape == (2, None)


def test_slice_input_producer_and_batch_shapes_as_tf(tf1):
    data = np.arange(14, dtype=np.float32).reshape(7, 2)

    def build(tf):
        row, label = tf.train.slice_input_producer([data, np.arange(7)], num_epochs=2,
                                                   shuffle=False)
        return tf.train.batch({"x": row, "y": label}, batch_size=3)
    want, _ = drain(tf1, build)
    got, _ = drain(graph, build)
    same(got, want)   # 14 rows, batches of 3: the last 2 rows never come out
    g = graph.Graph()
    with g.as_default():
        b = graph.train.batch([graph.constant([1, 2, 3])], 2)
        assert b.shape == (2, 3) and b.name == "batch:0"


def test_shuffled_pipelines_give_the_same_multiset(tf1):
    data = np.arange(20, dtype=np.int64)

    def build(tf):
        (x,) = tf.train.slice_input_producer([data], num_epochs=2, shuffle=True, seed=3)
        return tf.train.shuffle_batch([x], batch_size=5, capacity=12, min_after_dequeue=4,
                                      num_threads=2, seed=1, allow_smaller_final_batch=True)
    want, _ = drain(tf1, build)
    got, _ = drain(graph, build)
    assert Counter(np.concatenate(got).tolist()) == Counter(np.concatenate(want).tolist()) \
        == Counter(data.tolist() * 2)
    assert np.concatenate(got).tolist() != sorted(np.concatenate(got).tolist())


def test_fifo_queue_ops_as_tf(tf1):
    def build(tf):
        q = tf.FIFOQueue(5, [tf.float32, tf.int32], shapes=[(), (2,)])
        fill = q.enqueue_many([[1.0, 2.0, 3.0], [[1, 2], [3, 4], [5, 6]]])
        return q, fill, q.dequeue(), q.dequeue_many(2), q.dequeue_up_to(2), q.size()

    results = []
    for tfm in (tf1, graph):
        g = tfm.Graph()
        with g.as_default():
            q, fill, one, many, up_to, size = build(tfm)
            close = q.close()
            with tfm.Session(graph=g) as s:
                s.run(fill)
                r = [s.run(size), s.run(one), s.run(many), s.run(fill), s.run(close),
                     s.run(up_to), s.run(up_to), s.run(q.is_closed())]
                for op in (one, many, up_to):
                    with pytest.raises(tfm.errors.OutOfRangeError):
                        s.run(op)
                with pytest.raises(tfm.errors.CancelledError):
                    s.run(fill)
        results.append(r[:3] + r[4:])
    same(results[1], results[0])


def test_random_shuffle_queue_waits_for_min_after_dequeue():
    q = graph.RandomShuffleQueue(10, 3, graph.int64, shapes=[()], seed=5)
    put = q.enqueue_many([np.arange(5)])
    one, many, size = q.dequeue(), q.dequeue_up_to(10), q.size()
    with graph.Session() as s:
        s.run(put)
        got = [s.run(one), s.run(one)]       # 5 - 3 = 2 may come out before the close
        assert s.run(size) == 3
        waiter = threading.Thread(target=lambda: got.append(s.run(one)), daemon=True)
        waiter.start()
        waiter.join(0.3)
        assert waiter.is_alive()             # a third waits: min_after_dequeue holds 3
        s.run(q.close())
        waiter.join(10)
        got += list(s.run(many))
    assert sorted(got) == list(range(5))


def test_dequeue_blocks_until_another_thread_enqueues():
    q = graph.FIFOQueue(2, graph.float32, shapes=[()])
    x = graph.placeholder(graph.float32, ())
    put, take = q.enqueue(x), q.dequeue_many(3)
    with graph.Session() as s:
        def feed():
            for v in range(5):
                s.run(put, {x: v})   # blocks when 2 wait: capacity
        t = threading.Thread(target=feed, daemon=True)
        t.start()
        first = s.run(take)
        t.join(10)
        assert first.tolist() == [0, 1, 2] and s.run(q.size()) == 2


def test_closing_the_session_releases_waiting_ops():
    q = graph.FIFOQueue(1, graph.float32, shapes=[()])
    take = q.dequeue()
    s = graph.Session()
    caught = []

    def wait():
        try:
            s.run(take)
        except graph.errors.CancelledError as e:
            caught.append(e)
    t = threading.Thread(target=wait, daemon=True)
    t.start()
    t.join(0.3)
    s.close()
    t.join(10)
    assert not t.is_alive() and "Session was closed" in str(caught[0])


def test_training_loop_in_the_census_idiom(files):
    """coord + start_queue_runners + try/except OutOfRangeError/finally request_stop/join."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3
    tf = graph
    xs, ys = tf.train.slice_input_producer([x, y], num_epochs=25, shuffle=True, seed=1)
    bx, by = tf.train.shuffle_batch([xs, ys], batch_size=16, capacity=64,
                                    min_after_dequeue=16, num_threads=2)
    w = tf.Variable(np.zeros((3, 1), np.float32))
    b = tf.Variable(np.zeros(1, np.float32))
    loss = tf.reduce_mean(tf.square(tf.matmul(bx, w) + b - by))
    step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        steps = 0
        try:
            while not coord.should_stop():
                _, last = sess.run([step, loss])
                steps += 1
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
        coord.join(threads)
        assert steps == 64 * 25 // 16 and last < 1e-3, (steps, last)
        assert all(not t.is_alive() for t in threads)


def test_errors_in_runner_threads_reach_coord_join(tmp_path):
    q = graph.train.string_input_producer([str(tmp_path / "missing.txt")], shuffle=False)
    _, line = graph.TextLineReader().read(q)
    batched = graph.train.batch([line], 2)
    with graph.Session() as sess:
        coord = graph.train.Coordinator()
        threads = graph.train.start_queue_runners(sess, coord)
        with pytest.raises(graph.errors.NotFoundError, match="missing.txt"):
            try:
                sess.run(batched)   # the reader's error stops the coordinator, whose stop
            except graph.errors.OutOfRangeError:   # closes the batch queue: the loop ends
                pass
            finally:
                coord.request_stop()
            coord.join(threads)


def test_num_epochs_needs_local_variables_initialised():
    q = graph.train.string_input_producer(["a"], num_epochs=1)
    with graph.Session() as sess:
        coord = graph.train.Coordinator()
        threads = graph.train.start_queue_runners(sess, coord)
        with pytest.raises(graph.errors.FailedPreconditionError,
                           match="local_variables_initializer"):
            coord.join(threads)
    assert q.dtypes == [graph.string]


def test_misused_queues_fail_clearly_at_build_time():
    q = graph.FIFOQueue(3, [graph.float32], shapes=[(2,)])
    with pytest.raises(ValueError, match="has dtype int32, but the queue holds float32"):
        q.enqueue(graph.constant([1, 2]))
    with pytest.raises(TypeError, match="expected float32, got 'a'"):
        q.enqueue([["a", "b"]])
    with pytest.raises(ValueError, match=r"shape \(3,\) does not fit the queue's shape \(2,\)"):
        q.enqueue([[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match="2 value"):
        q.enqueue([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ValueError, match="rank at least 1"):
        graph.FIFOQueue(3, graph.float32, shapes=[()]).enqueue_many(1.0)
    shapeless = graph.FIFOQueue(3, graph.float32)
    with pytest.raises(ValueError, match="test_tf1_queues.py:[0-9]+.*built without shapes"):
        shapeless.dequeue_many(2)
    with pytest.raises(ValueError, match="All shapes must be fully defined"):
        graph.train.batch([graph.placeholder(graph.float32, (None,))], 2)
    with pytest.raises(ValueError, match="non-null"):
        graph.train.string_input_producer([])


def test_coordinator_stops_cleanly_on_out_of_range_and_rejects_live_threads():
    coord = graph.train.Coordinator()
    coord.request_stop(graph.errors.OutOfRangeError("end"))
    coord.join([])   # a clean stop: nothing raised
    coord = graph.train.Coordinator()
    release = threading.Event()
    t = threading.Thread(target=release.wait, args=(10,), daemon=True)
    t.start()
    coord.request_stop()
    with pytest.raises(RuntimeError, match="still running"):
        coord.join([t], stop_grace_period_secs=0.1)
    release.set()
    with pytest.raises(ValueError):
        graph.train.start_queue_runners()   # no default session
    assert graph.train.queue_runner.QueueRunner is graph.train.QueueRunner   # TF's module path


def test_one_session_runs_from_many_threads_with_count_up_to():
    v = graph.Variable(np.int64(0), name="counter")
    up = graph.count_up_to(v, 400)
    with graph.Session() as s:
        s.run(v.initializer)
        got = []

        def work():
            try:
                while True:
                    got.append(int(s.run(up)))
            except graph.errors.OutOfRangeError:
                pass
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert sorted(got) == list(range(400)) and s.run(v) == 400


def test_a_saver_checkpoints_a_graph_with_queues(tmp_path):
    q = graph.FIFOQueue(4, graph.float32, shapes=[()])
    w = graph.Variable(2.0)
    step = w.assign_add(q.dequeue())
    with graph.Session() as sess:
        sess.run([w.initializer, q.enqueue_many([[1.0, 2.0]])])
        sess.run(step)
        prefix = graph.train.Saver().save(sess, str(tmp_path / "model"))
        sess.run(step)
        graph.train.Saver().restore(sess, prefix)
        assert sess.run(w) == 3.0
    with pytest.raises(graph.errors.GraphFileError, match="FIFOQueue 'fifo_queue'.*restore"):
        graph.load(prefix)


def test_queue_runner_threads_end_when_the_coordinator_stops(tf1):
    """An endless producer: its threads wait on a full queue until request_stop, then the
    close-on-stop thread cancels the waiting enqueues and join returns (as TF's)."""
    def run(tf):
        g = tf.Graph()
        with g.as_default():
            q = tf.FIFOQueue(3, [tf.int64], shapes=[()])
            counter = tf.Variable(np.int64(0))
            qr = tf.train.QueueRunner(q, [q.enqueue([counter.assign_add(1)])] * 2)
            tf.train.add_queue_runner(qr)
            take = q.dequeue()
            init = tf.global_variables_initializer()
        with tf.Session(graph=g) as sess:
            sess.run(init)
            coord = tf.train.Coordinator()
            threads = qr.create_threads(sess, coord=coord, start=True)
            again = qr.create_threads(sess, coord=coord, start=True)   # already running
            deadline = tf.RunOptions(timeout_in_ms=30_000)   # see drain()
            got = [int(sess.run(take, options=deadline)) for _ in range(6)]
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)
            return len(threads), again, got, [t.is_alive() for t in threads]
    want, got = run(tf1), run(graph)
    assert got[:2] == want[:2] == (3, [])
    assert len(set(got[2])) == 6 and not any(got[3])


def test_a_dequeue_nothing_feeds_says_why(monkeypatch):
    from dualgrad.graph import queues
    monkeypatch.setattr(queues, "_HINT_AFTER", 0.4)
    q = graph.FIFOQueue(2, graph.float32, shapes=[()])
    take = q.dequeue()
    with graph.Session() as s:
        closer = threading.Timer(1.5, lambda: s.run(q.close()))
        closer.start()
        with pytest.warns(RuntimeWarning, match="start_queue_runners"):
            with pytest.raises(graph.errors.OutOfRangeError):
                s.run(take)
        closer.join()


def test_a_run_timeout_ends_a_wait_as_tf(tf1):
    for tfm in (tf1, graph):
        g = tfm.Graph()
        with g.as_default():
            q = tfm.FIFOQueue(2, tfm.float32, shapes=[()])
            take = q.dequeue()
        with tfm.Session(graph=g) as s:
            with pytest.raises(tfm.errors.DeadlineExceededError):
                s.run(take, options=tfm.RunOptions(timeout_in_ms=200))
        config = tfm.ConfigProto(operation_timeout_in_ms=200)
        with tfm.Session(graph=g, config=config) as s:
            with pytest.raises(tfm.errors.DeadlineExceededError):
                s.run(take)


def test_read_up_to_and_reader_counts_as_tf(tf1, files):
    def run(tf):
        g = tf.Graph()
        with g.as_default():
            q = tf.train.string_input_producer(files, num_epochs=2, shuffle=False)
            r = tf.TextLineReader()
            batch = r.read_up_to(q, 2)   # never across the end of a file
            counts = [r.num_records_produced(), r.num_work_units_completed()]
            init = tf.local_variables_initializer()
        with tf.Session(graph=g) as s:
            s.run(init)
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(s, coord)
            out = []
            try:
                while len(out) < 50:
                    out.append(s.run(list(batch), options=tf.RunOptions(timeout_in_ms=30_000)))
            except tf.errors.OutOfRangeError:
                pass
            out.append(s.run(counts))
            coord.request_stop()
            coord.join(threads)
        return out
    want, got = run(tf1), run(graph)
    same(got, want)
    assert got[-1] == [14, 4]   # 7 lines (headers included) and 2 files, twice

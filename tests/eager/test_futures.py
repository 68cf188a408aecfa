"""eager.futures against torch.futures: the same script on both, in one process."""
import threading

import pytest

from dualgrad.eager import futures as ours


def _script(mod):
    """What a user does with futures; returns what they would see."""
    seen = []
    f = mod.Future()
    seen.append(f.done())
    chained = f.then(lambda fut: fut.wait() + 1).then(lambda fut: fut.value() * 10)
    f.add_done_callback(lambda fut: seen.append(("callback", fut.value())))
    f.set_result(3)
    seen += [f.done(), chained.wait(), f.value()]
    try:
        f.set_result(4)
    except RuntimeError as e:
        seen.append(str(e))
    bad = mod.Future()
    bad.set_exception(ValueError("x"))
    for call in (bad.wait, bad.value):
        with pytest.raises(ValueError, match="^x$"):
            call()
    with pytest.raises(RuntimeError, match="Got the following error when running the "
                                           "callback: ValueError: x"):
        bad.then(lambda fut: fut.value()).wait()
    with pytest.raises(RuntimeError, match="ZeroDivisionError: division by zero"):
        f.then(lambda fut: 1 / 0).wait()
    quiet = mod.Future()
    quiet.add_done_callback(lambda fut: 1 / 0)      # reported, not raised
    quiet.set_result(1)
    a, b = mod.Future(), mod.Future()
    a.set_result(1)
    b.set_result(2)
    seen.append(mod.wait_all([a, b]))
    both = mod.collect_all([a, b]).wait()
    seen.append([x.value() for x in both])
    k = mod.Future()
    k.set_exception(KeyError("k"))
    with pytest.raises(KeyError):
        mod.wait_all([a, k])
    with pytest.raises(AssertionError, match="is of type <class 'int'>, not an Exception"):
        mod.Future().set_exception(3)
    return seen


def test_the_same_script_as_torch_futures():
    torch = pytest.importorskip("torch")
    expected = _script(torch.futures)
    assert _script(ours) == expected
    assert expected[-2:] == [[1, 2], [1, 2]]


def test_completed_from_another_thread_wakes_the_waiter_and_runs_callbacks_there():
    f = ours.Future()
    where = []
    f.add_done_callback(lambda fut: where.append(threading.current_thread().name))
    t = threading.Thread(target=lambda: f.set_result("v"), name="completer")
    t.start()
    assert f.wait(timeout=10) == "v"
    t.join()
    assert where == ["completer"]


def test_value_before_completion_and_wait_timeout_are_clear_errors():
    f = ours.Future()
    with pytest.raises(RuntimeError, match="has not completed yet; call wait"):
        f.value()
    with pytest.raises(TimeoutError, match="not completed within 0.01 s"):
        f.wait(timeout=0.01)


def test_collect_all_of_nothing_and_cuda_devices():
    assert ours.collect_all([]).wait() == []
    with pytest.raises(Exception, match="CUDA"):
        ours.Future(devices=["cuda:0"])


def test_reachable_as_torch_is():
    from dualgrad import eager
    assert eager.futures.Future is ours.Future and eager.futures.wait_all is ours.wait_all

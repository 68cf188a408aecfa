"""Issue 32, files: eager.save keeps every key apart, eager.load refuses a crafted file with
its own error naming the file, and a save killed mid-write leaves nothing a later save does
not remove (no safetensors-library temporary)."""
from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import time

import numpy as np
import pytest

from dualgrad import eager, graph
from dualgrad.ops import files

pytestmark = pytest.mark.usefixtures("hang_guard")

A, B = np.ones(2, np.float32), np.full(2, 7.0, np.float32)


@pytest.mark.parametrize("tree", [
    lambda a, b: {"enc": {"proj.weight": a}, "enc.proj": {"weight": b}},
    lambda a, b: {0: a, "0": b},
    lambda a, b: {"a": [a], "a.0": b},
    lambda a, b: {"x": (a, {"1": b}), "x.1#1": b, "x.1": {"1": a}},
], ids=["dotted-keys", "int-and-str-key", "list-item-and-dotted-key", "suffix-collision"])
def test_save_keeps_keys_that_spell_the_same_path_apart(tmp_path, tree):
    obj = tree(eager.tensor(A), eager.tensor(B))
    eager.save(obj, tmp_path / "c.pt")
    back = eager.load(tmp_path / "c.pt")
    assert _plain(back) == _plain(obj)


def _plain(x):
    if isinstance(x, eager.Tensor):
        return ("tensor", x.tolist())
    if isinstance(x, dict):
        return {(type(k).__name__, k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [_plain(v) for v in x])
    return x


def _tree_file(path, tree):
    from safetensors.numpy import save_file
    save_file({"w": A}, path, metadata={"format": "dualgrad-tree", "tree": tree})


@pytest.mark.parametrize("tree", [
    "[" * 100_000 + "]" * 100_000,                       # RecursionError in json
    '{"dict": ' + '{"list": [' * 5000 + "null" + "]}" * 5000 + "}",
    '{"tensor": "missing"}',                             # KeyError
    '{"int": 1, "float": "2"}',                          # too many values to unpack
    '{}', '{"dict": [[1]]}', '{"dict": [["k", 1, 2]]}', '{"dict": [[[1], 1]]}',
    '{"dict": 3}', '{"list": {"a": 1}}', '{"float": "pi"}', '{"int": "3"}',
    '{"tensor": ["w"]}', '{"set": [1]}', '[1, 2]', '3', 'not json',
], ids=lambda t: t[:30])
def test_load_of_a_crafted_tree_raises_its_own_error_naming_the_file(tmp_path, tree):
    path = tmp_path / "evil.pt"
    _tree_file(path, tree)
    with pytest.raises(ValueError, match=r"eager\.load: .*evil\.pt"):
        eager.load(path)


def test_load_of_a_tree_header_without_tree(tmp_path):
    path = tmp_path / "evil.pt"
    from safetensors.numpy import save_file
    save_file({"w": A}, path, metadata={"format": "dualgrad-tree"})
    with pytest.raises(ValueError, match=r"evil\.pt.*no 'tree'"):
        eager.load(path)


def test_writer_matches_what_the_safetensors_library_reads(tmp_path):
    from safetensors import safe_open
    from safetensors.numpy import load_file
    arrays = {"b": np.arange(3, dtype=">f8"), "a": np.ones((2, 3), np.float32).T,
              "m": np.array(True), "e": np.zeros((0, 4), np.int16), "h": np.float16([1, 2])}
    files.write_safetensors(tmp_path / "x.safetensors", arrays, {"format": "x"})
    back = load_file(tmp_path / "x.safetensors")
    assert list(back) == list(arrays)                   # the order of the state dict
    for k, v in arrays.items():
        assert back[k].dtype == v.dtype.newbyteorder("=") and back[k].shape == v.shape
        np.testing.assert_array_equal(back[k], v)
    with safe_open(tmp_path / "x.safetensors", "np") as f:
        assert f.metadata() == {"format": "x"}


_SLOW_SAVE = """
import sys, numpy as np
from dualgrad import eager
print("go", flush=True)
eager.save({"w": np.ones(60_000_000, np.float32), "epoch": 2}, sys.argv[1])
"""


def test_a_save_killed_mid_write_leaves_nothing_behind_after_the_next_save(tmp_path):
    path = tmp_path / "ckpt.pt"
    eager.save({"w": eager.ones(3), "epoch": 1}, path)
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_SAVE, str(path)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "go"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and \
            sum(os.path.getsize(tmp_path / n) for n in os.listdir(tmp_path)) < 2 ** 20:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert eager.load(path)["epoch"] == 1                # the old checkpoint is whole
    eager.save({"w": eager.ones(3), "epoch": 3}, path)
    assert os.listdir(tmp_path) == ["ckpt.pt"]           # nothing of the killed save is left


def test_a_stale_library_temporary_of_ours_is_removed_others_are_kept(tmp_path):
    ours, foreign, young = (tmp_path / ".tmpAbC123", tmp_path / ".tmpZZZ999",
                            tmp_path / ".tmpYoung1")
    files.write_safetensors(ours, {"w": A}, {"format": "dualgrad-state-dict"})
    files.write_safetensors(foreign, {"w": A}, {"format": "someone-else"})
    files.write_safetensors(young, {"w": A}, {"format": "dualgrad.graph"})
    old = time.time() - files.STALE_LIBRARY_SECONDS - 60
    for p in (ours, foreign):
        os.utime(p, (old, old))
    g = graph.Graph()
    with g.as_default():
        graph.constant(1.0, name="c")
    graph.save(str(tmp_path / "m"), graph=g)
    assert not ours.exists() and foreign.exists() and young.exists()


def test_header_is_padded_and_parsable():
    raw = files.safetensors_header({"w": A}, {"format": "x"})
    (n,) = struct.unpack("<Q", raw[:8])
    assert n % 8 == 0 and len(raw) == 8 + n
    assert json.loads(raw[8:])["w"]["data_offsets"] == [0, 8]

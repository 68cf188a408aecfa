"""graph.save, train.Saver and eager.save never lose the previous file: a save that dies
midway leaves it loadable, its temporaries are removed, stale ones of dead processes too."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from dualgrad import eager, graph
from dualgrad.ops import files


def model(value):
    g = graph.Graph()
    with g.as_default():
        v = graph.Variable(np.full(3, value, np.float32), name="v")
        init = graph.global_variables_initializer()
    return g, v, init


def temporaries(folder):
    return [p for p in os.listdir(folder) if p.endswith(files.SUFFIX)]


def test_graph_save_killed_midway_keeps_old_checkpoint(tmp_path, monkeypatch):
    g, v, init = model(1.0)
    with graph.Session(g) as s:
        s.run(init)
        graph.train.Saver().save(s, str(tmp_path / "ckpt"))
    real_dump = json.dump

    def dies(doc, f, **kw):
        f.write('{"format": "dualgrad.gra')       # a partial file, then the process "dies"
        raise KeyboardInterrupt
    monkeypatch.setattr(json, "dump", dies)
    g2, v2, init2 = model(2.0)
    with graph.Session(g2) as s:
        s.run(init2)
        with pytest.raises(KeyboardInterrupt):
            graph.save(str(tmp_path / "ckpt"), s)
    monkeypatch.setattr(json, "dump", real_dump)
    assert temporaries(tmp_path) == []
    loaded = graph.load(str(tmp_path / "ckpt"))
    with graph.Session(loaded) as s:
        np.testing.assert_array_equal(s.run("v:0"), [1.0, 1.0, 1.0])


def test_eager_save_failure_removes_temporary_and_keeps_old(tmp_path, monkeypatch):
    path = tmp_path / "w.pt"
    eager.save({"w": eager.ones(2)}, path)
    from dualgrad.eager import serialization

    def dies(tmp, arrays, metadata=None):
        with open(tmp, "wb") as f:
            f.write(b"\0" * 1000)
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(serialization, "write_safetensors", dies)
    with pytest.raises(OSError):
        eager.save({"w": eager.zeros(2)}, path)
    assert temporaries(tmp_path) == []
    monkeypatch.undo()
    np.testing.assert_array_equal(eager.load(path)["w"].numpy(), [1.0, 1.0])


def test_stale_temporary_of_a_killed_process_is_cleaned(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = tmp_path / f".w.pt.{dead}.abc123{files.SUFFIX}"
    stale.write_bytes(b"\0" * 4096)
    other = tmp_path / ".w.pt.unrelated.tmp"      # not our naming: left alone
    other.write_text("x")
    live = tmp_path / f".w.pt.{os.getppid()}.zzz{files.SUFFIX}"   # a running writer
    live.write_text("x")
    eager.save({"w": eager.ones(2)}, tmp_path / "w.pt")
    assert not stale.exists() and other.exists() and live.exists()
    assert temporaries(tmp_path) == [live.name]

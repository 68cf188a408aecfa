"""Run a script under `mpiexec -n N` from a test, with a timeout (never a hung test run).

Past the timeout every rank is sent SIGABRT with faulthandler enabled (PYTHONFAULTHANDLER),
so each prints its Python stack, and the test fails with those stacks: a hang is a failure
that says where each rank was stuck, not a stalled CI."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "scripts"


def mpiexec_path():
    """The mpiexec the `dist` extra installed beside this interpreter, else one on PATH."""
    pytest.importorskip("mpi4py")
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    assert found, f"mpi4py is installed but no mpiexec beside {sys.executable} or on PATH"
    return found


def run(argv, n=2, timeout=60, env=None):
    """`mpiexec -n n` + argv (a script under scripts/ or a command); the finished process."""
    if argv[0].endswith(".py"):
        argv = [sys.executable, str(SCRIPTS / argv[0]), *argv[1:]]
    cmd = [mpiexec_path(), "-n", str(n), *argv]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONFAULTHANDLER": "1", **(env or {})})
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        out, err = _stacks_of_hung_ranks(proc)
        pytest.fail(f"{' '.join(cmd)} still running after {timeout} s; each rank's stack:\n"
                    f"{out}\n{err}", pytrace=False)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _descendants(pid):
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def _stacks_of_hung_ranks(proc):
    """SIGABRT to every rank (faulthandler prints its stack), then end mpiexec."""
    for pid in _descendants(proc.pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"python" in f.read().split(b"\0")[0]:
                    os.kill(pid, signal.SIGABRT)
        except OSError:
            pass
    time.sleep(1.0)
    proc.kill()
    return proc.communicate(timeout=30)


def ok(proc):
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout

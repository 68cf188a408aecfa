"""Run a script under `mpiexec -n N` from a test, with a timeout (never a hung test run)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
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
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def ok(proc):
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout

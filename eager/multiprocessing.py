"""`torch.multiprocessing`: Python's multiprocessing (Process, Queue, set_start_method, …)
plus torch's `spawn(fn, args, nprocs, join, daemon, start_method)`: `fn(i, *args)` in
`nprocs` new processes; an exception in one is raised in the parent as torch's
`ProcessRaisedException` (with the child's traceback), a child that exits with a non-zero
code as `ProcessExitedException`. Tensors travel between processes as NumPy arrays do (by
pickling); there is no shared-memory tensor storage."""
from __future__ import annotations

import multiprocessing as _mp
import traceback
from multiprocessing import (Barrier, Event, Lock, Manager, Pipe, Pool, Process,  # noqa: F401
                             Queue, SimpleQueue, cpu_count, current_process,
                             get_all_start_methods, get_context, get_start_method,
                             set_start_method)

__all__ = ["spawn", "start_processes", "ProcessContext", "ProcessRaisedException",
           "ProcessExitedException", "Barrier", "Event", "Lock", "Manager", "Pipe", "Pool",
           "Process", "Queue", "SimpleQueue", "cpu_count", "current_process",
           "get_all_start_methods", "get_context", "get_start_method", "set_start_method"]


class ProcessRaisedException(Exception):
    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg)
        self.error_index, self.pid = error_index, error_pid


class ProcessExitedException(Exception):
    def __init__(self, msg, error_index, error_pid, exit_code):
        super().__init__(msg)
        self.error_index, self.pid, self.exit_code = error_index, error_pid, exit_code


def _wrap(fn, i, args, errors):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:  # noqa: BLE001 - sent to the parent, which raises it
        errors.put((i, traceback.format_exc()))
        raise SystemExit(1)


class ProcessContext:
    def __init__(self, processes, errors):
        self.processes, self._errors = processes, errors

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """True when every process has finished; raises on the first failure."""
        for p in self.processes:
            p.join(timeout)
        for i, p in enumerate(self.processes):
            if p.exitcode not in (None, 0):
                for q in self.processes:
                    if q.is_alive():
                        q.terminate()
                if not self._errors.empty():
                    j, tb = self._errors.get()
                    raise ProcessRaisedException(
                        f"\n\n-- Process {j} terminated with the following error:\n{tb}", j,
                        self.processes[j].pid)
                raise ProcessExitedException(f"process {i} terminated with exit code "
                                             f"{p.exitcode}", i, p.pid, p.exitcode)
        return all(p.exitcode is not None for p in self.processes)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    ctx = _mp.get_context(start_method)
    errors = ctx.SimpleQueue()
    procs = [ctx.Process(target=_wrap, args=(fn, i, tuple(args), errors), daemon=daemon)
             for i in range(nprocs)]
    for p in procs:
        p.start()
    context = ProcessContext(procs, errors)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    return start_processes(fn, args, nprocs, join, daemon, start_method)

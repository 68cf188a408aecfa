"""torch.distributed.rpc on MPI: named workers calling functions on one another.

Every process of an `mpiexec -n N` job calls `init_rpc(name)`; rank and world size come from
MPI (given ones must agree). Each worker then runs an agent: a service thread that receives
requests and replies on a communicator of its own, and a pool of `num_worker_threads` threads
(16, as torch) that run the requested functions, so a function may itself make RPCs, to any
worker including its caller. The service thread needs MPI_THREAD_MULTIPLE, which mpi4py asks
for and MPICH gives (init_rpc refuses a lower level). MPI has no receive that lets a thread
sleep, so the service thread polls, with sleeps that grow to 0.2 ms while this worker awaits
a reply, 1 ms in the second after any traffic and 10 ms when quiet (about 1 % of a core until
`shutdown()`; a call that reaches a quiet worker may wait up to 10 ms more).

    rpc.init_rpc(f"worker{rank}")          # under mpiexec -n 2
    if rank == 0:
        rpc.rpc_sync("worker1", torch.add, args=(torch.ones(2), 3))    # tensor([4., 4.])
        fut = rpc.rpc_async("worker1", torch.add, args=(torch.ones(2), 3))
        rref = rpc.remote("worker1", torch.add, args=(torch.ones(2), 1))
        rref.to_here()                     # tensor([2., 2.]), fetched from its owner
    rpc.shutdown()                         # waits for every worker's outstanding work

What travels, and how, is wire.py's subject: functions and classes by reference (module and
qualified name, imported by the callee), arguments and results as tensors (dtype, shape and
requires_grad kept, data copied), arrays, numbers, strings, bytes and containers of them, in
a JSON header plus raw bytes; never pickle, so other objects raise TypeError naming them.

As torch: an exception raised by the function is raised again in the caller with the same
type and a message holding the callee's traceback ("On WorkerInfo(id=1, name=worker1): ...");
a call that gets no reply within its timeout (`rpc_timeout`, 60 s by default; 0 waits for
ever) fails with a RuntimeError "RPC ran for more than set timeout". The owner drops an RRef's
value when the RRef that remote() returned is collected without having been sent in an RPC;
a value whose RRef was sent stays until `shutdown()` (torch counts the copies instead).
Distributed autograd (`distributed.autograd`: contexts, backward across workers in torch's
FAST mode, get_gradients) lives here too, beside the agent it rides on.
"""
from __future__ import annotations

import atexit
import enum
import itertools
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from dualgrad.ops import distributed as _mpi
from dualgrad.ops.core import user_frame
from ... import devices as _devices
from ...autograd import grad as _grad
from ...core import Tensor, leaves_reached
from ...futures import Future
from . import functions
from .wire import Codec, reference, resolve

__all__ = ["init_rpc", "shutdown", "rpc_sync", "rpc_async", "remote", "RRef", "WorkerInfo",
           "get_worker_info", "get_rpc_timeout", "is_available", "BackendType",
           "RpcBackendOptions", "TensorPipeRpcBackendOptions", "functions"]

DEFAULT_RPC_TIMEOUT_SEC = 60.0
UNSET_RPC_TIMEOUT = -1.0
DEFAULT_NUM_WORKER_THREADS = 16
_REQUEST, _REPLY = 1, 2
# NOTE: an MPI receive cannot wake a sleeping thread, so the agent polls: every 0.2 ms at
# most while this worker awaits a reply, 1 ms in the second after any traffic, 10 ms after
# that. Quiet, that costs about 1 % of a core on the project's machine (a Python sleep and wake-up
# alone is ~40 us there, an Improbe ~30 us); a call reaching a quiet worker waits <= 10 ms more
_WAITING_CAP_S, _IDLE_CAP_S, _QUIET_CAP_S = 2e-4, 1e-3, 1e-2


class BackendType(enum.Enum):
    """torch's one backend name; the transport underneath is MPI."""
    TENSORPIPE = "TENSORPIPE"


class RpcBackendOptions:
    def __init__(self, rpc_timeout=DEFAULT_RPC_TIMEOUT_SEC, init_method="env://"):
        self.rpc_timeout, self.init_method = float(rpc_timeout), init_method


class TensorPipeRpcBackendOptions(RpcBackendOptions):
    """torch's options: `num_worker_threads` and `rpc_timeout` (seconds) act as in torch;
    `init_method` is not needed (mpiexec connects the workers) and is ignored; device maps
    and devices are for CUDA tensors, which this CPU-only build has none of."""

    def __init__(self, *, num_worker_threads=DEFAULT_NUM_WORKER_THREADS,
                 rpc_timeout=DEFAULT_RPC_TIMEOUT_SEC, init_method="env://", device_maps=None,
                 devices=None, _transports=None, _channels=None):
        super().__init__(rpc_timeout, init_method)
        if num_worker_threads < 1:
            raise ValueError(f"TensorPipeRpcBackendOptions: num_worker_threads must be at "
                             f"least 1, got {num_worker_threads}")
        self.num_worker_threads = int(num_worker_threads)
        for d in devices or ():
            _devices.check(f"cuda:{d}" if isinstance(d, int) else d)
        for worker, mapping in (device_maps or {}).items():
            self.set_device_map(worker, mapping)
        self.device_maps, self.devices = {}, list(devices or ())

    def set_device_map(self, to, device_map):
        for d in device_map:
            _devices.check(f"cuda:{d}" if isinstance(d, int) else d)


class WorkerInfo:
    """A worker's name and id (its MPI rank)."""
    __slots__ = ("name", "id")

    def __init__(self, name, id):
        self.name, self.id = name, id

    def __eq__(self, other):
        return isinstance(other, WorkerInfo) and (self.name, self.id) == (other.name, other.id)

    def __hash__(self):
        return hash((self.name, self.id))

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, name={self.name})"

    def _rpc_tag(self):
        return {"worker": [self.name, self.id]}


# -- the public calls -------------------------------------------------------------------------
def init_rpc(name, backend=None, rank=-1, world_size=None, rpc_backend_options=None):
    """Join the job's RPC world as worker `name` (unique across the job)."""
    if _State.agent is not None:
        raise RuntimeError("init_rpc: RPC is already initialized; call rpc.shutdown() first")
    if backend not in (None, BackendType.TENSORPIPE):
        raise ValueError(f"init_rpc: backend={backend!r}: dualgrad's RPC runs on MPI "
                         f"(leave backend out, or BackendType.TENSORPIPE)")
    if not isinstance(name, str) or not name:
        raise ValueError(f"init_rpc: a worker's name must be a non-empty string, got {name!r}")
    options = rpc_backend_options or TensorPipeRpcBackendOptions()
    _State.agent = _Agent(name, options, rank, world_size)


def shutdown(graceful=True, timeout=0):
    """Leave the RPC world. graceful (the default): wait until every worker has called
    shutdown and no worker has a call outstanding, answering requests meanwhile; `timeout`
    (seconds, 0 for none) bounds the wait for this worker's own outstanding calls. Then the
    agent's threads end. graceful=False stops at once, failing outstanding calls."""
    agent = _agent("shutdown")
    try:
        agent.close(graceful, timeout)
    finally:
        _State.agent = None


def rpc_sync(to, func, args=None, kwargs=None, timeout=UNSET_RPC_TIMEOUT):
    """Run func(*args, **kwargs) on worker `to` and return its result (blocks)."""
    return _agent("rpc_sync").call(to, "call", func, args, kwargs, timeout, "rpc_sync").wait()


def rpc_async(to, func, args=None, kwargs=None, timeout=UNSET_RPC_TIMEOUT):
    """Run func(*args, **kwargs) on worker `to`; a `futures.Future` of its result."""
    return _agent("rpc_async").call(to, "call", func, args, kwargs, timeout, "rpc_async")


def remote(to, func, args=None, kwargs=None, timeout=UNSET_RPC_TIMEOUT):
    """Run func(*args, **kwargs) on worker `to`, which keeps the result: an RRef to it, at
    once (an error in func is raised by `to_here()`)."""
    agent = _agent("remote")
    owner = agent.worker(to, "remote")
    rref = RRef._made(agent, owner, (agent.me.id, next(agent.ids)), sole=True)
    try:
        agent.call(owner, "remote", func, args, kwargs, timeout, "remote", rref=list(rref._key))
    except BaseException:
        rref._sole = False          # NOTE: never sent, so there is nothing to release
        raise
    return rref


def get_worker_info(worker_name=None):
    """The WorkerInfo of `worker_name` (this worker's when None)."""
    agent = _agent("get_worker_info")
    return agent.me if worker_name is None else agent.worker(worker_name, "get_worker_info")


def get_rpc_timeout():
    return _agent("get_rpc_timeout").timeout


def is_available():
    return True


class _State:
    agent = None


@atexit.register
def _stop_at_exit():
    """A script that ends without shutdown(): stop the agent before MPI is finalised."""
    if _State.agent is not None:
        _State.agent._stop()
        _State.agent = None


def _agent(what):
    if _State.agent is None:
        raise RuntimeError(f"{what}: RPC has not been initialized. Call "
                           f"torch.distributed.rpc.init_rpc first (dualgrad: "
                           f"eager.distributed.rpc.init_rpc, under mpiexec)")
    return _State.agent


# -- RRef -------------------------------------------------------------------------------------
class RRef:
    """A reference to a value owned by one worker. `RRef(value)` makes a local one (owned
    here); `remote()` returns one owned by the callee."""

    def __init__(self, value, type_hint=None):
        agent = _agent("RRef")
        self._agent, self._owner = agent, agent.me
        self._key, self._sole = (agent.me.id, next(agent.ids)), False
        agent.owned_future(self._key).set_result(value)

    @classmethod
    def _made(cls, agent, owner, key, sole=False):
        """sole: made by remote() here and not sent anywhere yet, so when it is collected the
        owner may drop the value (one sent in an RPC makes the value live until shutdown)."""
        rref = cls.__new__(cls)
        rref._agent, rref._owner, rref._key, rref._sole = agent, owner, tuple(key), sole
        return rref

    def __del__(self):
        if self.__dict__.get("_sole"):
            self._agent.dropped.append((self._owner, self._key))   # NOTE: no lock in __del__

    def owner(self):
        return self._owner

    def owner_name(self):
        return self._owner.name

    def is_owner(self):
        return self._owner == self._agent.me

    def confirmed_by_owner(self):
        return True

    def local_value(self):
        """The value itself, on its owner (waits until remote() has made it)."""
        if not self.is_owner():
            raise RuntimeError(f"RRef.local_value(): this RRef is owned by {self._owner}, not "
                               f"by this worker ({self._agent.me}); call local_value() on its "
                               f"owner, or to_here() here for a copy")
        return self._agent.owned_future(self._key).wait()

    def to_here(self, timeout=UNSET_RPC_TIMEOUT):
        """A copy of the value, fetched from the owner (blocks; raises the error the function
        that made it raised)."""
        if self.is_owner():
            return self.local_value()
        return self._agent.call(self._owner, "fetch", None, (), {}, timeout, "RRef.to_here",
                                rref=list(self._key)).wait()

    def rpc_sync(self, timeout=UNSET_RPC_TIMEOUT):
        """`rref.rpc_sync().method(*args)` runs the value's method on its owner."""
        return _Proxy(self, rpc_sync, timeout)

    def rpc_async(self, timeout=UNSET_RPC_TIMEOUT):
        return _Proxy(self, rpc_async, timeout)

    def remote(self, timeout=UNSET_RPC_TIMEOUT):
        return _Proxy(self, remote, timeout)

    def _rpc_tag(self):
        self._sole = False
        return {"rref": [self._owner.name, self._owner.id, *self._key]}

    def __reduce__(self):
        raise TypeError("an RRef travels in RPC arguments and results only (no pickle)")

    def __repr__(self):
        kind = "OwnerRRef" if self.is_owner() else "UserRRef"
        return f"{kind}(owner={self._owner}, id={self._key[0]}:{self._key[1]})"


class _Proxy:
    def __init__(self, rref, how, timeout):
        self.rref, self.how, self.timeout = rref, how, timeout

    def __getattr__(self, name):
        def call(*args, **kwargs):
            return self.how(self.rref.owner(), _run_method, args=(self.rref, name, args, kwargs),
                            timeout=self.timeout)
        return call


def _run_method(rref, name, args, kwargs):
    return getattr(rref.local_value(), name)(*args, **kwargs)


# -- the agent: one per worker, between init_rpc and shutdown -------------------------------
class _Agent:
    def __init__(self, name, options, rank, world_size):
        MPI = _mpi.mpi()
        if MPI.Query_thread() != MPI.THREAD_MULTIPLE:
            raise RuntimeError(f"init_rpc: dualgrad's RPC answers requests on a thread of its "
                               f"own while your code runs, which needs MPI_THREAD_MULTIPLE; "
                               f"MPI was initialised with level {MPI.Query_thread()} (leave "
                               f"mpi4py.rc.thread_level at 'multiple')")
        self.comm = MPI.COMM_WORLD.Dup()      # NOTE: apart from collectives and the user's
        me, n = self.comm.Get_rank(), self.comm.Get_size()
        for what, given, actual in (("rank", rank, me), ("world_size", world_size, n)):
            if given not in (-1, None) and given != actual:
                self.comm.Free()
                raise ValueError(f"init_rpc: {what}={given} but mpiexec started this process "
                                 f"as {what} {actual}; start every worker with `mpiexec -n N "
                                 f"python script.py` (processes started by torch.multiprocessing"
                                 f".spawn or torchrun are not connected by MPI), and leave "
                                 f"{what} out or pass MPI's")
        names = self._exchange(name)
        self.me = WorkerInfo(name, me)
        self.workers = {nm: WorkerInfo(nm, i) for i, nm in enumerate(names)}
        self.timeout = options.rpc_timeout
        self.codec = Codec(self._rref_from_wire, WorkerInfo)
        self.ids = itertools.count()
        self.lock = threading.Lock()
        self.pending = {}          # call id -> (future, deadline, timeout, what)
        self.outbox = []           # (request, bytes) of sends not yet complete
        self.owned = {}            # rref key -> future of the value this worker owns
        self.contexts = {}         # distributed autograd context id -> _Context
        self.dropped = []          # (owner, key) of collected RRefs whose values may go
        self.pool = ThreadPoolExecutor(getattr(options, "num_worker_threads",
                                               DEFAULT_NUM_WORKER_THREADS), "rpc-worker")
        self.running = True
        self.thread = threading.Thread(target=self._serve_forever, name="rpc-agent",
                                       daemon=True)
        self.thread.start()
        _mpi.abort_on_uncaught()

    def _exchange(self, name):
        mine = np.frombuffer(name.encode(), np.uint8)
        n = self.comm.Get_size()
        sizes = np.empty(n, np.int64)
        _mpi.wait(self.comm.Iallgather(np.array([mine.size], np.int64), sizes), "init_rpc")
        out = np.empty(int(sizes.sum()), np.uint8)
        displs = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        _mpi.wait(self.comm.Iallgatherv(mine, [out, sizes, displs, _mpi.mpi().BYTE]),
                  "init_rpc")
        names = [bytes(out[a:a + s]).decode() for a, s in zip(displs, sizes)]
        if len(set(names)) < n:
            self.comm.Free()
            raise RuntimeError(f"init_rpc: worker names must be unique; the ranks gave {names}")
        return names

    def worker(self, to, what):
        if isinstance(to, WorkerInfo):
            to = to.name
        if isinstance(to, int) and 0 <= to < len(self.workers):
            return next(w for w in self.workers.values() if w.id == to)
        if to not in self.workers:
            raise RuntimeError(f"{what}: unknown destination worker {to!r}; the workers are "
                               f"{sorted(self.workers)}")
        return self.workers[to]

    # -- calling ------------------------------------------------------------------------------
    def call(self, to, kind, func, args, kwargs, timeout, api, **extra):
        dest = self.worker(to, api)
        where = user_frame()
        name = "" if func is None else f" of {reference(func, api)}"
        what = f"{api} to {dest.name!r}{name}" + (f" ({where[0]}:{where[1]})" if where else "")
        timeout = self.timeout if timeout is None or timeout < 0 else float(timeout)
        call_id = next(self.ids)
        ctx, sent = self.current_context(), []
        if ctx is not None:
            extra.update(ctx=ctx.id, send=next(self.ids))
        data = self.codec.dumps({"id": call_id, "kind": kind, **extra},
                                (func, tuple(args or ()), dict(kwargs or {})), what, sent)
        if ctx is not None:
            ctx.sent(extra["send"], sent, dest.id)
        fut = Future()
        deadline = time.monotonic() + timeout if timeout > 0 else None
        with self.lock:
            if not self.running:
                raise RuntimeError(f"{what}: RPC is shutting down on this worker")
            self.pending[call_id] = (fut, deadline, timeout, what)
        self._post(dest.id, _REQUEST, data)
        return fut

    def _post(self, dest, tag, data):
        MPI = _mpi.mpi()
        with self.lock:
            self.outbox.append((self.comm.Isend([data, MPI.BYTE], dest, tag), data))

    def _rref_from_wire(self, owner_name, owner_id, created_on, local_id):
        return RRef._made(self, WorkerInfo(owner_name, owner_id), (created_on, local_id))

    def owned_future(self, key):
        with self.lock:
            return self.owned.setdefault(tuple(key), Future())

    # -- distributed autograd -------------------------------------------------------------------
    def current_context(self):
        return self.contexts.get(getattr(_CURRENT, "cid", None))

    def context(self, cid, what="dist_autograd"):
        ctx = self.contexts.get(cid)
        if ctx is None:
            raise RuntimeError(f"{what}: Could not find autograd context with id: {cid}")
        return ctx

    def _received(self, head, got, src):
        """Tensors that arrived requiring grad in a context: leaves whose gradients go back."""
        if "ctx" in head:
            with self.lock:
                ctx = self.contexts.setdefault(head["ctx"], _Context(head["ctx"]))
            ctx.received(src, head["send"], got)

    def backprop(self, ctx, tensors, grads):
        """Backward from `tensors` with `grads` (None: none) on this worker: leaves that came
        from another worker send their gradients back to it, the others accumulate in ctx."""
        pairs = [(t, g) for t, g in zip(tensors, grads) if g is not None and t.requires_grad]
        back = {}
        for t, g in _backward_to_leaves(pairs):
            origin = ctx.origin(t)
            if origin is None:
                ctx.accumulate(t, g)
            else:
                worker, send_id, index = origin
                back.setdefault((worker, send_id), {})[index] = g
        for (worker, send_id), by_index in back.items():
            grads = [by_index.get(i) for i in range(max(by_index) + 1)]
            self.call(worker, "call", _backward_on_sender, (ctx.id, send_id, grads), {}, -1,
                      "dist_autograd.backward").wait()

    # -- the service thread ---------------------------------------------------------------------
    def _serve_forever(self):
        MPI = _mpi.mpi()
        status, pause, last = MPI.Status(), 1e-5, time.monotonic()
        tidied = last
        while self.running:
            msg = self.comm.Improbe(MPI.ANY_SOURCE, MPI.ANY_TAG, status)
            if msg is not None:
                buf = np.empty(status.Get_count(MPI.BYTE), np.uint8)
                msg.Recv([buf, MPI.BYTE])
                self._dispatch(status.Get_source(), status.Get_tag(), buf)
                pause, last = 1e-5, time.monotonic()
                if last - tidied < 0.01:      # NOTE: deadlines pass under steady traffic too
                    continue
            self._tidy()
            tidied = time.monotonic()
            if msg is not None:
                continue
            time.sleep(pause)
            pause = min(2 * pause, self._longest_pause(time.monotonic() - last))

    def _longest_pause(self, idle):
        """Poll often while a reply is awaited, less after a second without traffic."""
        if self.pending:
            return _WAITING_CAP_S
        return _IDLE_CAP_S if idle < 1.0 else _QUIET_CAP_S

    def _dispatch(self, src, tag, buf):
        try:
            if tag == _REPLY:
                self._complete(src, buf)
            else:
                self.pool.submit(self._run_request, src, buf)
        except Exception:  # noqa: BLE001 - the service thread must outlive a bad message
            sys.stderr.write(f"dualgrad rpc agent on {self.me}: could not handle a message "
                             f"from rank {src}:\n{traceback.format_exc()}")

    def _tidy(self):
        """Forget completed sends; fail calls past their deadline."""
        now, expired = time.monotonic(), []
        with self.lock:
            self.outbox = [(r, d) for r, d in self.outbox if not r.Test()]
            for call_id, (fut, deadline, timeout, what) in list(self.pending.items()):
                if deadline is not None and now > deadline:
                    del self.pending[call_id]
                    expired.append((fut, timeout, what))
        for fut, timeout, what in expired:
            fut.set_exception(RuntimeError(
                f"{what}: RPC ran for more than set timeout ({int(timeout * 1000)} ms) and "
                f"will now be marked with an error"))
        while self.dropped and self.running:
            owner, key = self.dropped.pop()
            self.call(owner, "forget", None, (), {}, -1, "RRef release", rref=list(key))

    def _complete(self, src, buf):
        head, value = self.codec.loads(buf)
        with self.lock:
            entry = self.pending.pop(head["id"], None)
        if entry is None:
            return                  # NOTE: the call had timed out; its late reply is dropped
        try:
            got = []
            result = value(got)
            self._received(head, got, src)
        except Exception as e:  # noqa: BLE001 - a result this worker cannot rebuild
            entry[0].set_exception(RuntimeError(f"{entry[3]}: the reply could not be read: "
                                                f"{type(e).__name__}: {e}"))
            return
        if head["ok"]:
            entry[0].set_result(result)
        else:
            entry[0].set_exception(_rebuilt(result))

    # -- answering ------------------------------------------------------------------------------
    def _run_request(self, src, buf):
        head = {"id": None}
        try:
            head, value = self.codec.loads(buf)
            if head["kind"] == "forget":      # NOTE: once made, so a late remote() is gone too
                key = tuple(head["rref"])
                self.owned_future(key).add_done_callback(lambda f: self.owned.pop(key, None))
                self._send_reply(src, head["id"], True, None)
                return
            if head["kind"] == "fetch":
                self._received(head, [], src)
                self.owned_future(head["rref"]).add_done_callback(
                    lambda f: self._reply_from(src, head["id"], f, head.get("ctx")))
                return
            got = []
            func, args, kwargs = value(got)
            self._received(head, got, src)
            with _in_context(head.get("ctx")):
                result = func(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - sent back to the caller, as torch
            self._reply_error(src, head["id"], e, head.get("rref"))
            return
        if getattr(func, "_wrapped_async_rpc_function", None) is not None:
            if not isinstance(result, Future):
                err = TypeError(f"{reference(func, 'rpc')} is an async_execution function but "
                                f"returned a {type(result).__name__}, not a Future")
                self._reply_error(src, head["id"], err, head.get("rref"))
                return
            result.add_done_callback(lambda f: self._finish(src, head, f))
            return
        done = Future()
        done.set_result(result)
        self._finish(src, head, done)

    def _finish(self, src, head, fut):
        """Reply with fut's outcome; for remote(), keep it as the RRef's value first."""
        if head["kind"] == "remote":
            try:
                value = fut.value()
            except Exception as e:  # noqa: BLE001 - kept for to_here() to raise
                self._reply_error(src, head["id"], e, head["rref"])
                return
            self.owned_future(head["rref"]).set_result(value)
            self._send_reply(src, head["id"], True, None)
            return
        self._reply_from(src, head["id"], fut, head.get("ctx"))

    def _reply_from(self, src, call_id, fut, ctx_id=None):
        try:
            value = fut.value()
        except Exception as e:  # noqa: BLE001 - sent back to the caller
            self._reply_error(src, call_id, e, None)
            return
        self._send_reply(src, call_id, True, value, ctx_id)

    def _reply_error(self, src, call_id, e, rref):
        error = getattr(e, "_rpc_error", None)      # NOTE: a stored one goes out as it came
        if error is None:
            text = (f"On {self.me}:\n{e!r}\n"
                    + "".join(traceback.format_exception(type(e), e, e.__traceback__)))
            sys.stderr.write(text + "\n")          # NOTE: torch prints it on the callee too
            error = {"type": reference(type(e), "rpc"), "text": text}
        if rref is not None:
            self.owned_future(rref).set_exception(_rebuilt(error))
        if call_id is not None:
            self._send_reply(src, call_id, False, error)

    def _send_reply(self, src, call_id, ok, value, ctx_id=None):
        what = f"the reply of {self.me} to rank {src}"
        head, sent = {"id": call_id, "ok": ok}, []
        ctx = self.contexts.get(ctx_id)
        if ctx is not None:
            head.update(ctx=ctx_id, send=next(self.ids))
        try:
            data = self.codec.dumps(head, value, what, sent)
            if ctx is not None:
                ctx.sent(head["send"], sent, src)
        except TypeError as e:
            data = self.codec.dumps({"id": call_id, "ok": False},
                                    {"type": "builtins:TypeError", "text": str(e)}, what)
        self._post(src, _REPLY, data)

    # -- shutdown -------------------------------------------------------------------------------
    def close(self, graceful, timeout):
        try:
            if graceful:
                self._drain(timeout)
                _mpi.wait(self.comm.Ibarrier(), "rpc.shutdown (every worker's calls answered)")
                self.pool.shutdown(wait=True)
                _mpi.wait(self.comm.Ibarrier(), "rpc.shutdown (every worker's pool idle)")
        finally:
            self._stop()

    def _stop(self):
        """End the threads and leave the communicator; outstanding calls fail."""
        with self.lock:
            self.running = False
            left, self.pending = list(self.pending.values()), {}
        self.thread.join()
        self.pool.shutdown(wait=False, cancel_futures=True)
        for fut, _, _, what in left:
            fut.set_exception(RuntimeError(f"{what}: RPC was shut down on this worker "
                                           f"before the reply came"))
        self.comm.Free()
        if not _mpi.is_initialized():
            _mpi.restore_excepthook()

    def _drain(self, timeout):
        """Wait until this worker has no call outstanding (each has its own deadline)."""
        deadline = time.monotonic() + timeout if timeout else None
        pause = 1e-4
        while True:
            with self.lock:
                if not self.pending:
                    return
                what = next(iter(self.pending.values()))[3]
            if deadline is not None and time.monotonic() > deadline:
                raise RuntimeError(f"rpc.shutdown: {what} still has no reply after "
                                   f"{timeout} s")
            time.sleep(pause)
            pause = min(2 * pause, _IDLE_CAP_S)


# -- distributed autograd: contexts, and backward across workers (torch's FAST mode) ----------
_CURRENT = threading.local()     # the context id this thread's RPCs carry


class _Context:
    """One distributed autograd context on one worker: what it sent and received that requires
    grad, and the gradients its own leaves accumulated."""

    def __init__(self, cid):
        self.id, self.lock = cid, threading.Lock()
        self.sends, self.origins, self.grads, self.peers = {}, {}, {}, set()

    def sent(self, send_id, tensors, worker):
        with self.lock:
            self.peers.add(worker)
            if tensors:
                self.sends[send_id] = tensors

    def received(self, worker, send_id, tensors):
        with self.lock:
            self.peers.add(worker)
            for i, t in enumerate(tensors):
                self.origins[id(t)] = (worker, send_id, i, t)

    def origin(self, t):
        found = self.origins.get(id(t))
        return None if found is None else found[:3]

    def accumulate(self, t, g):
        with self.lock:
            old = self.grads.get(id(t))
            self.grads[id(t)] = (t, g if old is None else Tensor(old[1]._array + g._array))


class _in_context:
    """Run with this thread's RPCs in context `cid` (None: leave it as it is)."""

    def __init__(self, cid):
        self.cid = cid

    def __enter__(self):
        self.before = getattr(_CURRENT, "cid", None)
        if self.cid is not None:
            _CURRENT.cid = self.cid

    def __exit__(self, *exc):
        _CURRENT.cid = self.before


def _backward_to_leaves(pairs):
    """(leaf, gradient) of a backward from (tensor, gradient) pairs; no .grad is touched. The
    graph is kept (retain_graph): a send may be reached again by a later part of the pass."""
    out = {}

    def add(t, g):
        out[id(t)] = (t, g if id(t) not in out else Tensor(out[id(t)][1]._array + g._array))
    inner = []
    for t, g in pairs:
        g = g if isinstance(g, Tensor) else Tensor(g)
        if t._node is None:
            add(t, g)
        else:
            inner.append((t, g))
    if inner:
        outs = [t for t, _ in inner]
        reached = leaves_reached(outs)
        if reached:
            grads = _grad(outs, reached, grad_outputs=[g for _, g in inner], retain_graph=True,
                          allow_unused=True)
            for t, g in zip(reached, grads):
                if g is not None:
                    add(t, g)
    return list(out.values())


def _backward_on_sender(cid, send_id, grads):
    """On the worker that sent tensors: carry the backward on from them."""
    agent = _agent("dist_autograd.backward")
    ctx = agent.context(cid, "dist_autograd.backward")
    agent.backprop(ctx, ctx.sends.get(send_id, []), grads)


def _release_context(cid):
    agent = _State.agent
    if agent is None:
        return
    with agent.lock:
        ctx = agent.contexts.pop(cid, None)
    for worker in sorted(ctx.peers) if ctx is not None else ():
        if worker != agent.me.id:
            rpc_async(worker, _release_context, args=(cid,))


class dist_autograd_context:
    """`with dist_autograd.context() as context_id:` RPCs made in the block (and the calls they
    make in turn) record what they send and receive that requires grad; backward() and
    get_gradients() use the id. Leaving the block frees the context on every worker it
    reached."""

    def __enter__(self):
        agent = _agent("dist_autograd.context")
        self.cid = (agent.me.id << 48) + next(agent.ids)
        with agent.lock:
            agent.contexts[self.cid] = _Context(self.cid)
        self.scope = _in_context(self.cid)
        self.scope.__enter__()
        return self.cid

    def __exit__(self, *exc):
        self.scope.__exit__()
        _release_context(self.cid)


def dist_backward(context_id, roots, retain_graph=False):
    """Backward from `roots` (scalar tensors) through every RPC of the context: gradients of
    tensors that came from another worker go back to it, and each worker's leaves accumulate
    theirs in the context (read with get_gradients), never in .grad."""
    agent = _agent("dist_autograd.backward")
    ctx = agent.context(context_id, "dist_autograd.backward")
    roots = list(roots)
    for r in roots:
        if not isinstance(r, Tensor) or r._array.size != 1:
            raise RuntimeError("dist_autograd.backward: each root must be a scalar tensor")
    with _in_context(context_id):
        agent.backprop(ctx, roots, [Tensor(np.ones_like(r._array)) for r in roots])


def dist_get_gradients(context_id):
    """{tensor: gradient} of this worker's tensors in the context."""
    ctx = _agent("dist_autograd.get_gradients").context(context_id,
                                                         "dist_autograd.get_gradients")
    with ctx.lock:
        return dict(ctx.grads.values())


def _rebuilt(error):
    """The caller's exception: the callee's type with its traceback text, as torch."""
    try:
        kind = resolve(error["type"])
        if isinstance(kind, type) and issubclass(kind, BaseException):
            e = kind(error["text"])
            e._rpc_error = error
            return e
    except Exception as e:  # noqa: BLE001 - as torch, when the type cannot be rebuilt
        return RuntimeError(f"Failed to create original exception type. Error msg was {e} "
                            f"Original exception on remote side was {error['text']}")
    return RuntimeError(error["text"])

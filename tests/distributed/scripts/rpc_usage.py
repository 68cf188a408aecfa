"""torch.distributed.rpc as a user meets it, on two workers; the same script runs on dualgrad
(`mpiexec -n 2 python rpc_usage.py dualgrad`) and on torch (`python rpc_usage.py torch PORT`,
which spawns its two processes). Worker 0 prints one line per check; test_rpc.py compares
them with what it expects and with torch's lines."""
import sys
import time

if sys.argv[1] == "torch":
    import torch
    import torch.distributed.autograd as dist_autograd
    import torch.distributed.rpc as rpc
    from torch.distributed.optim import DistributedOptimizer
    from torch.futures import wait_all
else:
    from dualgrad import eager as torch
    from dualgrad.eager.distributed import autograd as dist_autograd
    from dualgrad.eager.distributed import rpc
    from dualgrad.eager.distributed.optim import DistributedOptimizer
    from dualgrad.eager.futures import wait_all


def add(a, b):
    return a + b


def describe(t):
    return (str(t.dtype).split(".")[-1], tuple(t.shape), t.requires_grad, t.tolist())


def boom(what):
    raise ValueError(f"bad {what}")


def slow(seconds, value):
    time.sleep(seconds)
    return value


def owner_sum(rref):
    return rref.local_value().sum().item()


class Counter:
    def __init__(self, start):
        self.n = start

    def inc(self, k):
        self.n += k
        return self.n


@rpc.functions.async_execution
def add_via(to, x):
    """Runs on worker 1: asks worker 0 (the caller) for x + 1, then doubles it, without
    holding a thread meanwhile."""
    return rpc.rpc_async(to, add, args=(x, 1)).then(lambda fut: fut.value() * 2)


def make_head():
    torch.manual_seed(1)
    return torch.nn.Linear(4, 3)


def head_forward(head_rref, h):
    return head_rref.local_value()(h)


def param_rrefs(module_rref):
    return [rpc.RRef(p) for p in module_rref.local_value().parameters()]


def dist_autograd_check():
    """Worker 0 holds the first layer, worker 1 the second (made there by rpc.remote): three
    SGD steps through dist_autograd and DistributedOptimizer against the same model trained
    in one process."""
    torch.manual_seed(0)
    body = torch.nn.Linear(5, 4)
    head = rpc.remote("worker1", make_head)
    local = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), make_head())
    with torch.no_grad():
        local[0].weight.copy_(body.weight)
        local[0].bias.copy_(body.bias)
    params = [rpc.RRef(p) for p in body.parameters()] + rpc.rpc_sync("worker1", param_rrefs,
                                                                     args=(head,))
    opt = DistributedOptimizer(torch.optim.SGD, params, lr=0.1)
    local_opt = torch.optim.SGD(local.parameters(), lr=0.1)
    x, y = torch.ones(6, 5) * 0.3, torch.zeros(6, 3)
    same_loss = same_grads = True
    for _ in range(3):
        with dist_autograd.context() as context_id:
            out = rpc.rpc_sync("worker1", head_forward, args=(head, body(x).tanh()))
            loss = ((out - y) ** 2).mean()
            dist_autograd.backward(context_id, [loss])
            grads = dist_autograd.get_gradients(context_id)
            opt.step(context_id)
        local_opt.zero_grad()
        ref = ((local(x) - y) ** 2).mean()
        ref.backward()
        local_opt.step()
        same_loss &= abs(loss.item() - ref.item()) < 1e-6
        same_grads &= bool((grads[body.weight] - local[0].weight.grad).abs().max() < 1e-6)
        same_grads &= body.weight.grad is None
    return f"dist_autograd: losses match one process {same_loss}, gradients {same_grads}"


def error_line(e):
    text = str(e)
    return (f"{type(e).__name__} callee-named={'On WorkerInfo(id=1, name=worker1)' in text} "
            f"message={'bad thing' in text} traceback={'in boom' in text}")


def checks():
    out = []
    r = rpc.rpc_sync("worker1", add, args=(torch.ones(2), 3))
    out.append(f"rpc_sync: {describe(r)}")
    t = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    out.append(f"tensor travels: {rpc.rpc_sync('worker1', describe, args=(t,))}")
    out.append(f"kwargs: {rpc.rpc_sync('worker1', add, args=(1,), kwargs={'b': 2})}")
    futs = [rpc.rpc_async("worker1", add, args=(i, 10)) for i in range(3)]
    out.append(f"rpc_async + wait_all: {wait_all(futs)}")
    chained = rpc.rpc_async("worker1", add, args=(1, 2)).then(lambda f: f.value() * 10)
    out.append(f"future then: {chained.wait()}")
    rref = rpc.remote("worker1", add, args=(torch.ones(3), 1))
    out.append(f"remote: owner={rref.owner()} owner_name={rref.owner_name()} "
               f"is_owner={rref.is_owner()} to_here={rref.to_here().tolist()}")
    out.append(f"rref as argument, local_value on the owner: "
               f"{rpc.rpc_sync('worker1', owner_sum, args=(rref,))}")
    counter = rpc.remote("worker1", Counter, args=(5,))
    out.append(f"rref proxy: {counter.rpc_sync().inc(2)} {counter.rpc_async().inc(3).wait()}")
    out.append(f"async_execution: {rpc.rpc_sync('worker1', add_via, args=('worker0', 4))}")
    out.append(f"get_worker_info: {rpc.get_worker_info('worker1')} {rpc.get_worker_info()}")
    for call in (lambda: rpc.rpc_sync("worker1", boom, args=("thing",)),
                 lambda: rpc.rpc_async("worker1", boom, args=("thing",)).wait(),
                 lambda: rpc.remote("worker1", boom, args=("thing",)).to_here()):
        try:
            call()
            out.append("remote exception: not raised")
        except Exception as e:
            out.append(f"remote exception: {error_line(e)}")
    start = time.monotonic()
    try:
        rpc.rpc_sync("worker1", slow, args=(0.9, "late"), timeout=0.2)
        out.append("timeout: not raised")
    except RuntimeError as e:
        out.append(f"timeout: RuntimeError {'RPC ran for more than set timeout' in str(e)} "
                   f"fast={time.monotonic() - start < 0.8}")
    out.append(dist_autograd_check())
    return out


def run(rank):
    opts = rpc.TensorPipeRpcBackendOptions(num_worker_threads=8, rpc_timeout=20)
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=2, rpc_backend_options=opts)
    if rank == 0:
        for line in checks():
            print(line, flush=True)
        in_flight = rpc.rpc_async("worker1", slow, args=(0.3, "done in flight"))
    rpc.shutdown()                 # worker 1 keeps answering until worker 0's call is done
    if rank == 0:
        print(f"shutdown waited: {in_flight.done()} {in_flight.wait()}", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "torch":
        import os
        import torch.multiprocessing as mp
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[2])
        mp.spawn(run, nprocs=2)
    else:
        from mpi4py import MPI
        run(MPI.COMM_WORLD.Get_rank())

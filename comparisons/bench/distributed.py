"""Data-parallel training speed on 1 and 2 MPI ranks, and what FSDP saves per rank.

    dualgrad bench --distributed [mlp|transformer|all] [--quick] [--json PATH]
    python -m dualgrad.comparisons.bench.distributed [--steps N] [--ranks 1 2] [--json PATH]

For the MLP and the transformer, each on its task's batches of 64 split between the ranks
(strong scaling: the same global batch), it runs `mpiexec -n R` for every R in --ranks (it
starts mpiexec itself: run it without) and measures, on rank 0 after the warm-up steps,
steps per second of a whole training step with dualgrad's DDP (eager, and compiled: the
averaging inside the replayed graph) and FSDP (eager) and, when torch is installed, torch's
DDP on the gloo backend on the same ranks, model, weights and batches. It reports scaling efficiency
(speed-up over 1 rank divided by the rank count), payload bytes each rank hands to
collectives per step (dualgrad counts them in ops.distributed; for torch DDP: its
gradients' bytes, which its all-reduce carries), and each rank's parameter + gradient +
optimizer-state bytes under DDP and FSDP. BLAS and torch use one thread per rank.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

MODELS = ("mlp", "transformer")
TAG = "DUALGRAD_DIST_BENCH "
MODULE = "dualgrad.comparisons.bench.distributed"


# -- one rank (under mpiexec) -----------------------------------------------------------------
def _batches(model, steps):
    from ..models.common import TASKS
    task = TASKS[model]()
    out, epoch = [], 0
    while len(out) < steps:
        out += [b for b in task.batches(epoch) if len(b[-1]) == 64]
        epoch += 1
    return out[:steps]


def _state_bytes(trainer):
    """This rank's bytes of parameters, their gradients and the optimizer's state."""
    params = list(trainer.model.parameters())
    from dualgrad.eager import Tensor
    total = sum(p.nbytes + (p.grad.nbytes if p.grad is not None else 0) for p in params)
    for state in trainer.opt.state.values():
        total += sum(v.nbytes for v in state.values()
                     if isinstance(v, (np.ndarray, Tensor)) and v.ndim)
    return total


def _time_dualgrad(model, mode, kind, batches, warm):
    from dualgrad.ops import distributed as mpi
    from ..distributed import distributed_trainer
    trainer, step = distributed_trainer(model, mode, kind)
    for b in batches[:warm]:
        step(*b)
    mpi.barrier()
    sent, t0 = mpi.traffic(), time.perf_counter()
    for b in batches[warm:]:
        step(*b)
    seconds = time.perf_counter() - t0
    n = len(batches) - warm
    return {"steps_per_s": n / seconds, "bytes_per_step": (mpi.traffic() - sent) / n,
            "state_bytes": _state_bytes(trainer)}


def _time_torch(model, batches, warm):
    import torch
    import torch.distributed as tdist
    import torch.nn.functional as F
    from dualgrad.eager.utils.data.distributed import DistributedSampler
    from dualgrad.ops import distributed as mpi
    from ..models import load
    from ..refs.torch_models import _inputs, _model_and_opt
    torch.manual_seed(0)
    net, opt = _model_and_opt(model, load(model, "eager").initial_weights(0))
    ddp = torch.nn.parallel.DistributedDataParallel(net)

    def step(*batch):
        share = list(DistributedSampler(range(len(batch[-1])), shuffle=False))
        args = [torch.from_numpy(np.ascontiguousarray(a[share])) for a in _inputs(model, batch)]
        loss = F.cross_entropy(ddp(*args), torch.from_numpy(batch[-1][share]))
        opt.zero_grad()
        loss.backward()
        opt.step()
    for b in batches[:warm]:
        step(*b)
    tdist.barrier()
    t0 = time.perf_counter()
    for b in batches[warm:]:
        step(*b)
    seconds = time.perf_counter() - t0
    grads = sum(p.numel() * p.element_size() for p in net.parameters())
    return {"steps_per_s": (len(batches) - warm) / seconds,
            "bytes_per_step": grads}


def _torch_init():
    """torch's gloo process group on the ranks mpiexec started (one per worker: a second
    init on the same port can meet the first one's store)."""
    import torch
    import torch.distributed as tdist
    from dualgrad.ops import distributed as mpi
    torch.set_num_threads(1)
    port = np.array([29500 + os.getpid() % 1000 if mpi.rank() == 0 else 0], np.int64)
    mpi.broadcast(port, 0)
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{int(port[0])}",
                             rank=mpi.rank(), world_size=mpi.size())
    return tdist


PEERS = (("ddp", "eager", "ddp"), ("ddp compiled", "compiled", "ddp"),
         ("fsdp", "eager", "fsdp"))


def _save_batches(path, models, n):
    """The driver loads the digits once (scikit-learn takes seconds to import) for every rank."""
    np.savez(path, **{f"{m}:{i}:{j}": a for m in models
                      for i, b in enumerate(_batches(m, n)) for j, a in enumerate(b)})


def _load_batches(path, model):
    with np.load(path) as f:
        keys = sorted((tuple(map(int, k.split(":")[1:])), k) for k in f.files
                      if k.startswith(model + ":"))
        out = {}
        for (i, _), k in keys:
            out.setdefault(i, []).append(f[k])
    return [tuple(out[i]) for i in sorted(out)]


def worker(steps, warm, models, with_torch, data):
    from dualgrad.eager import distributed as dist
    from ..threads import blas_limit
    dist.init_process_group(backend="mpi")
    tdist = _torch_init() if with_torch else None
    out = {}
    with blas_limit(1):
        for model in models:
            batches = _load_batches(data, model)
            for name, mode, kind in PEERS:
                out[f"{model}/dualgrad {name}"] = _time_dualgrad(model, mode, kind, batches,
                                                                 warm)
            if with_torch:
                out[f"{model}/torch ddp (gloo)"] = _time_torch(model, batches, warm)
    if dist.get_rank() == 0:
        print(TAG + json.dumps(out), flush=True)
    if tdist is not None:
        tdist.destroy_process_group()
    dist.destroy_process_group()


# -- the driver -------------------------------------------------------------------------------
def _mpiexec():
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else "mpiexec"


def under_mpiexec():
    """True when this process is a rank that mpiexec started (MPICH's or Open MPI's)."""
    return any(v in os.environ for v in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE"))


def run(ranks=(1, 2), steps=20, with_torch=None, models=MODELS, warm=3):
    """{ranks: {"model/peer": figures}} from one mpiexec run per rank count."""
    if under_mpiexec():
        raise RuntimeError("the distributed benchmark starts `mpiexec -n 1` and `mpiexec -n 2` "
                           "itself: run it without mpiexec")
    if with_torch is None:
        import importlib.util
        with_torch = importlib.util.find_spec("torch") is not None
    import tempfile
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = str(Path(tmp) / "batches.npz")
        _save_batches(data, models, steps + warm)
        for n in ranks:
            results[n] = _launch(n, steps, warm, models, with_torch, data)
    return results


def _launch(n, steps, warm, models, with_torch, data):
    cmd = [_mpiexec(), "-n", str(n), sys.executable, "-m", MODULE, "--worker", "--data", data,
           "--steps", str(steps), "--warm", str(warm), "--models", *models] + \
        ([] if with_torch else ["--no-torch"])
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    line = next((s for s in proc.stdout.splitlines() if s.startswith(TAG)), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"mpiexec -n {n} (the benchmark's ranks) failed with exit code "
                           f"{proc.returncode}: {_why(proc.stderr)}\ncommand: {' '.join(cmd)}"
                           f"\n{proc.stderr}")
    return json.loads(line[len(TAG):])


def _why(stderr):
    """The line of a failed run's stderr that says why, for the one line the CLI prints: a
    rank's own report (ops.distributed.abort) or the last exception, else the last line."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for key in ("dualgrad.distributed:", "Error", "Exception"):
        found = [ln for ln in lines if key in ln]
        if found:
            return found[-1 if key != "dualgrad.distributed:" else 0]
    return lines[-1] if lines else "no output on stderr"


def table_rows(results):
    """Rows: model/peer, ranks, steps/s, efficiency vs 1 rank, bytes/step, state bytes."""
    rows, base = [], results.get(1, {})
    for n, figures in sorted(results.items()):
        for name, f in figures.items():
            ref = base.get(name, {}).get("steps_per_s")
            eff = f["steps_per_s"] / (ref * n) if ref else None
            rows.append((name, n, f["steps_per_s"], eff, f["bytes_per_step"],
                         f.get("state_bytes")))
    return rows


def measure(models=MODELS, quick=False, with_torch=None):
    """The CLI's run: 1 and 2 ranks, with the machine and its load average around it."""
    from .run import cpu_model
    before = os.getloadavg()
    steps, warm = (3, 1) if quick else (20, 3)
    results = run((1, 2), steps, with_torch, models, warm)
    return {"machine": {"cpu": cpu_model(), "cores": os.cpu_count()},
            "steps": steps, "warm_up": warm,
            "load_average": {"before": before, "after": os.getloadavg()},
            "results": {str(k): v for k, v in results.items()}}


def render(measured, console):
    """A rich table of `measure`'s figures."""
    from rich.table import Table
    load, m = measured["load_average"], measured["machine"]
    # NOTE: no box and model + peer in one column: the table fits an 80-column terminal
    table = Table(title=f"data-parallel training step, {measured['steps']} timed steps after "
                        f"{measured['warm_up']} warm-up ({m['cores']} cores, load average "
                        f"{load['before'][0]:.1f} before, {load['after'][0]:.1f} after)",
                  box=None, pad_edge=False, header_style="bold underline")
    for col in ("model / peer", "ranks", "steps/s", "eff.", "bytes/step", "state B/rank"):
        table.add_column(col, justify="left" if col == "model / peer" else "right",
                         no_wrap=True)
    results = {int(k): v for k, v in measured["results"].items()}
    for name, n, sps, eff, sent, state in table_rows(results):
        model, peer = name.split("/", 1)
        table.add_row(f"{model} {peer.removeprefix('dualgrad ')}", str(n), f"{sps:.1f}",
                      "-" if eff is None else f"{eff:.0%}", f"{sent:,.0f}",
                      "-" if state is None else f"{state:,}")
    console.print(table)
    console.print("peers are dualgrad's unless named torch; efficiency: steps/s on N ranks / (N x steps/s on 1); bytes/step: payload "
                  "each rank hands to collectives; state: parameters + gradients + optimizer "
                  "state per rank (docs/distributed.md)")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m dualgrad.comparisons.bench.distributed")
    p.add_argument("--steps", type=int, default=20, help="timed steps per run (default 20)")
    p.add_argument("--warm", type=int, default=3, help="untimed steps first (default 3)")
    p.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args.steps, args.warm, args.models, not args.no_torch, args.data)
    results = run(args.ranks, args.steps, False if args.no_torch else None, args.models,
                  args.warm)
    print(f"{'model / peer':34} {'ranks':>5} {'steps/s':>8} {'eff.':>6} "
          f"{'bytes/step':>11} {'state bytes/rank':>17}")
    for name, n, sps, eff, sent, state in table_rows(results):
        print(f"{name:34} {n:>5} {sps:>8.1f} {'-' if eff is None else f'{eff:.0%}':>6} "
              f"{sent:>11,.0f} {'-' if state is None else f'{state:,}':>17}")
    if args.json:
        Path(args.json).write_text(json.dumps({str(k): v for k, v in results.items()},
                                              indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

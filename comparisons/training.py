"""`dualgrad train`: one model in one mode, or in all three (`--mode all`), with a progress bar,
held-out accuracy per epoch, and optionally a figure of the curves (`--plot`) and TensorBoard
logs (`--logdir`).

>>> run = fit("mlp", "eager", epochs=1)
>>> len(run.epoch_loss), len(run.losses) == run.steps
(1, True)
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from .models import load, make_trainer
from .models.common import TASKS, evaluate

MODES = ("eager", "graph", "compiled")


@dataclass
class Run:
    """One training run: per-step losses, and per epoch the mean loss and held-out accuracy."""
    model: str
    mode: str
    optimize: bool = True
    losses: list = field(default_factory=list)
    epoch_loss: list = field(default_factory=list)
    epoch_acc: list = field(default_factory=list)
    seconds: float = 0.0
    trainer: object = None
    distributed: str = None          # "ddp" / "fsdp" under mpiexec (comparisons/distributed.py)

    @property
    def steps(self) -> int:
        return len(self.losses)

    @property
    def label(self) -> str:
        off = self.mode == "graph" and not self.optimize
        dist = f", {self.distributed} on {_world_size()} ranks" if self.distributed else ""
        return f"{self.model} ({self.mode}{', optimize=False' if off else ''}{dist})"


def _world_size():
    from dualgrad.ops import distributed as mpi
    return mpi.size()


def fit(model, mode, epochs=None, seed=0, optimize=True, on_step=None, on_epoch=None,
        distributed=None) -> Run:
    """Train `model` in `mode` from the shared initial weights; returns the Run.
    on_step(run) after every step, on_epoch(run) after every epoch's evaluation.
    distributed: "ddp" or "fsdp" under mpiexec (each rank trains on its share of each batch)."""
    epochs = epochs or load(model, "eager").EPOCHS
    task = TASKS[model]()
    if distributed is None:
        trainer = make_trainer(model, mode, seed, optimize)
        step = trainer.step
    else:
        from .distributed import distributed_trainer
        trainer, step = distributed_trainer(model, mode, distributed, seed, optimize)
    run = Run(model, mode, optimize, trainer=trainer, distributed=distributed)
    t0 = time.perf_counter()
    for epoch in range(epochs):
        start = run.steps
        for batch in task.batches(epoch):
            run.losses.append(step(*batch))
            if on_step:
                on_step(run)
        run.epoch_loss.append(sum(run.losses[start:]) / (run.steps - start))
        run.epoch_acc.append(evaluate(run.trainer, task))
        run.seconds = time.perf_counter() - t0
        if on_epoch:
            on_epoch(run)
    return run


def _plural(n, word) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def train(model, mode, epochs=None, seed=0, optimize=True, console=None, plot=None,
          logdir=None, distributed=None) -> list[Run]:
    """Train in `mode` ("all": eager, graph and compiled, one after the other, from the same
    weights on the same batches); report each; draw and log if asked. Returns the Runs.
    distributed: "ddp" or "fsdp" under mpiexec; only rank 0 reports."""
    epochs = epochs or load(model, "eager").EPOCHS
    modes = MODES if mode == "all" else (mode,)
    if distributed is not None:
        from .distributed import init
        if init() != 0 and console is not None:
            console.quiet = True     # NOTE: one rank reports, as PyTorch scripts do
    runs = [_train_one(model, m, epochs, seed, optimize, console, logdir, distributed)
            for m in modes]
    if plot:
        plot_runs(runs, plot)
        if console is not None:
            console.print(f"wrote {plot}")
    if logdir and console is not None:
        console.print(f"TensorBoard logs in {logdir} ({', '.join(modes)}): "
                      f"tensorboard --logdir {logdir}")
    return runs


def _train_one(model, mode, epochs, seed, optimize, console, logdir, distributed) -> Run:
    n_batches = len(TASKS[model]().batches(0))
    label = Run(model, mode, optimize, distributed=distributed).label
    log = _Logger(logdir, mode) if logdir else None
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                  TextColumn("epoch {task.fields[epoch]}/{task.fields[epochs]}"),
                  TextColumn("loss {task.fields[loss]}"),
                  TextColumn("held-out acc {task.fields[acc]}"), TimeElapsedColumn(),
                  console=console, transient=False,
                  disable=console is None or console.quiet) as bar:
        job = bar.add_task(label, total=epochs * n_batches, epoch=0, epochs=epochs,
                           loss="-", acc="-")

        def on_step(run):
            bar.update(job, advance=1, epoch=len(run.epoch_loss) + 1,
                       loss=f"{run.losses[-1]:.4f}")

        def on_epoch(run):
            bar.update(job, acc=f"{run.epoch_acc[-1]:.3f}")
            if log:
                log.epoch(run)
        run = fit(model, mode, epochs, seed, optimize, on_step, on_epoch, distributed)
    if log:
        log.close(run)
    if console is not None:
        console.print(f"{label}: {_plural(epochs, 'epoch')}, {_plural(run.steps, 'step')} in "
                      f"{run.seconds:.1f} s; final loss {run.losses[-1]:.4f}; held-out "
                      f"accuracy [bold]{run.epoch_acc[-1]:.3f}[/] on "
                      f"{len(TASKS[model]().y_test)} digits")
    return run


class _Logger:
    """TensorBoard logs of one run in LOGDIR/MODE: loss per step, loss and accuracy per epoch,
    and the model's graph (graph mode: the Session's graph; compiled: the traced graph)."""

    def __init__(self, logdir, mode):
        from dualgrad.eager.utils.tensorboard import SummaryWriter
        self.writer = SummaryWriter(os.path.join(logdir, mode))
        self.logged = 0

    def epoch(self, run):
        for k in range(self.logged, run.steps):
            self.writer.add_scalar("loss/step", run.losses[k], k + 1)
        self.logged = run.steps
        epoch = len(run.epoch_loss)
        self.writer.add_scalar("loss/epoch", run.epoch_loss[-1], epoch)
        self.writer.add_scalar("accuracy/held_out", run.epoch_acc[-1], epoch)

    def close(self, run):
        graph = _graph_of(run.trainer)
        if graph is not None:
            self.writer.add_graph(graph)
        self.writer.close()


def _graph_of(trainer):
    """The graph a trainer runs: graph mode's Graph, or the compiled training step's trace."""
    g = getattr(trainer, "graph", None)
    if g is not None:
        return g
    fn = getattr(trainer, "train_step", None)
    return getattr(fn, "graph", None) if getattr(fn, "traces", 0) else None


def plot_runs(runs, path):
    """Loss and held-out accuracy per epoch, one line per run, two panels side by side."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    for run in runs:
        epochs = range(1, len(run.epoch_loss) + 1)
        ax_loss.plot(epochs, run.epoch_loss, marker="o", label=run.label)
        ax_acc.plot(epochs, run.epoch_acc, marker="o", label=run.label)
    ax_loss.set(title="training loss (mean per epoch)", xlabel="epoch", ylabel="loss")
    ax_acc.set(title="held-out accuracy", xlabel="epoch", ylabel="accuracy")
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)

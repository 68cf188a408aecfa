"""`dualgrad train`: one model, one mode, a progress bar with the loss, held-out accuracy."""
from __future__ import annotations

import time

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from .models import load
from .models.common import TASKS, evaluate


def make_trainer(model, mode, seed=0, optimize=True, weights=None):
    """A trainer of `model` in `mode` (eager, graph or compiled) from the shared weights."""
    w = weights if weights is not None else load(model, "eager").initial_weights(seed)
    if mode == "graph":
        return load(model, "graph").build(weights=w, optimize=optimize)
    return load(model, "eager").build(weights=w, compiled=mode == "compiled")


def train(model, mode, epochs=None, seed=0, optimize=True, console=None, distributed=None):
    """Train and report; returns (losses, held-out accuracy).

    distributed: "ddp" or "fsdp" under mpiexec (comparisons/distributed.py); rank 0 prints.
    """
    epochs = epochs or load(model, "eager").EPOCHS
    task = TASKS[model]()
    label = f"{model} ({mode}{', optimize=False' if mode == 'graph' and not optimize else ''})"
    show = True
    if distributed is None:
        trainer = make_trainer(model, mode, seed, optimize)
        step = trainer.step
    else:
        from . import distributed as D
        trainer, step = D.distributed_trainer(model, mode, distributed, seed, optimize)
        label = f"{label[:-1]}, {distributed} on {D.world_size()} ranks)"
        show = D.rank() == 0
        if console is not None and not show:
            console.quiet = True     # NOTE: one rank reports, as PyTorch scripts do
    n_batches = len(task.batches(0))
    losses, acc = [], float("nan")
    t0 = time.perf_counter()
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                  TextColumn("epoch {task.fields[epoch]}/{task.fields[epochs]}"),
                  TextColumn("loss {task.fields[loss]:.4f}"),
                  TextColumn("held-out acc {task.fields[acc]}"), TimeElapsedColumn(),
                  console=console, transient=False, disable=not show) as bar:
        job = bar.add_task(label, total=epochs * n_batches, epoch=0, epochs=epochs,
                           loss=float("nan"), acc="-")
        for epoch in range(epochs):
            for batch in task.batches(epoch):
                losses.append(step(*batch))
                bar.update(job, advance=1, epoch=epoch + 1, loss=losses[-1])
            acc = evaluate(trainer, task)
            bar.update(job, acc=f"{acc:.3f}")
    if console is not None and show:
        console.print(f"{label}: {epochs} epochs, {len(losses)} steps in "
                      f"{time.perf_counter() - t0:.1f} s; final loss {losses[-1]:.4f}; "
                      f"held-out accuracy [bold]{acc:.3f}[/] on {len(task.y_test)} digits")
    return losses, acc

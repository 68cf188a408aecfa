"""The held-out accuracies docs/tutorial.md quotes, from a recorded run.

    python -m dualgrad.comparisons.accuracy --json docs/accuracy.json   # train, record, print
    python -m dualgrad.comparisons.accuracy --from docs/accuracy.json   # print the recorded run

Every model trains in every mode (eager, graph, compiled) from the same initial weights
(seed 0) on the same batches, with the model's own epochs and optimiser, as
`dualgrad train MODEL --mode all` does. The JSON keeps the accuracy per epoch, the final
loss, the seconds and the machine; the Markdown table is what the tutorial shows.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import datetime, timezone

from .training import MODES, fit  # noqa: F401 - MODES is part of the table

MODELS = {  # name -> (what it is, what it reads)
    "mlp": ("MLP 64-128-10, SGD+momentum", "digits, 64 pixels"),
    "cnn": ("CNN conv-pool-conv-dense, SGD+momentum", "digits, 1x8x8"),
    "rnn": ("LSTM-64 over rows, SGD+momentum, batch 16",
            "digits read row by row, 0-3 last rows dropped"),
    "transformer": ("transformer block (d 32, 4 heads), Adam",
                    "same rows as tokens, padding mask"),
}


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def record(models=tuple(MODELS), seed=0, progress=print) -> dict:
    """Train every model in every mode; the run as a JSON-ready dict."""
    from .bench import machine_description
    out = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "commit": _commit(), "seed": seed, "machine": machine_description(), "runs": []}
    for model in models:
        for mode in MODES:
            run = fit(model, mode, seed=seed)
            out["runs"].append({"model": model, "mode": mode, "epochs": len(run.epoch_acc),
                                "accuracy": run.epoch_acc, "final_loss": run.losses[-1],
                                "seconds": round(run.seconds, 2)})
            progress(f"{model} {mode}: {run.epoch_acc[-1]:.3f} after {len(run.epoch_acc)} "
                     f"epochs, {run.seconds:.1f} s")
    return out


def markdown(rec) -> str:
    """The tutorial's table: one row per model, the final held-out accuracy per mode."""
    by = {(r["model"], r["mode"]): r for r in rec["runs"]}
    lines = ["| model | data | epochs | " + " | ".join(MODES) + " |",
             "|---|---|---|" + "---|" * len(MODES)]
    for model, (what, data) in MODELS.items():
        runs = [by.get((model, m)) for m in MODES]
        if not any(runs):
            continue
        epochs = next(r["epochs"] for r in runs if r)
        cells = [f"{r['accuracy'][-1]:.3f}" if r else "-" for r in runs]
        lines.append(f"| {what} | {data} | {epochs} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m dualgrad.comparisons.accuracy",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="*", default=list(MODELS), metavar="MODEL")
    p.add_argument("--json", metavar="PATH", help="write the run here")
    p.add_argument("--from", dest="source", metavar="PATH", help="print a recorded run")
    args = p.parse_args(argv)
    if args.source:
        with open(args.source) as f:
            rec = json.load(f)
    else:
        from .threads import blas_limit
        with blas_limit(1):
            rec = record(args.models, progress=lambda s: print(s, file=sys.stderr))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rec, f, indent=1)
    print(markdown(rec), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())

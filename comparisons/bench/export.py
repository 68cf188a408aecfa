"""Inference latency of exported programs, side by side, in one run.

For each comparison model (mlp, cnn, rnn with its mask, transformer) at batch 1 and 64:

- **dualgrad**: the `ExportedProgram` of the eager model (`compiler.export`), called on
  NumPy arrays (graph.Session with the optimiser);
- **onnxruntime**: our ONNX file of the same program (`ep.to_onnx`), `InferenceSession.run`;
- **torch**: the same model in PyTorch eager under `torch.inference_mode()` (same weights),
  when torch is installed.

Every peer runs on one thread (NumPy's BLAS, onnxruntime's intra-op pool, torch), timed with
comparisons/bench/timing.py (medians of interleaved repeats). The outputs are checked equal
before timing.

    python -m dualgrad.comparisons.bench.export [--quick] [--json PATH] [--markdown PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile

import numpy as np

from .timing import time_group
from ..threads import blas_limit

MODELS = ("mlp", "cnn", "rnn", "transformer")
BATCHES = (1, 64)


def _peers(name, batch, tmp):
    from dualgrad import compiler
    from .. import exports
    fn, example = exports.eager_program(name)
    ep = compiler.export(fn, example)
    ins = exports.test_inputs(name, batch)
    peers, outs = {"dualgrad": lambda: ep(*ins)}, {"dualgrad": ep(*ins)}
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    if ort is not None:
        path = ep.to_onnx(os.path.join(tmp, f"{name}.onnx"))
        so = ort.SessionOptions()
        so.intra_op_num_threads = so.inter_op_num_threads = 1
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        feeds = {i.name: a for i, a in zip(sess.get_inputs(), ins)}
        peers["onnxruntime"] = lambda: sess.run(None, feeds)
        outs["onnxruntime"] = sess.run(None, feeds)[0]
    torch_peer = _torch_peer(name, fn, ins)
    if torch_peer is not None:
        peers["torch"], outs["torch"] = torch_peer
    return peers, outs


def _torch_peer(name, fn, ins):
    try:
        import torch
    except ImportError:
        return None
    from ..refs.torch_models import _model_and_opt
    from ..models.common import numpy_state
    eager_model = fn if hasattr(fn, "state_dict") else fn.__closure__[0].cell_contents
    model, _ = _model_and_opt(name, numpy_state(eager_model))
    model.eval()
    targs = [torch.from_numpy(np.array(a, copy=True)) for a in ins]

    def run():
        with torch.inference_mode():
            return model(*targs)
    return run, run().numpy()


def run(models=MODELS, batches=BATCHES, quick=False):
    """[{model, batch, peer: {median_s, ...}, max_abs_diff}] for every model and batch."""
    rows = []
    threads = None
    try:
        import torch
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    try:
        with tempfile.TemporaryDirectory() as tmp, blas_limit(1):
            for name in models:
                for batch in batches:
                    peers, outs = _peers(name, batch, tmp)
                    ref = outs["dualgrad"]
                    diff = max(float(np.max(np.abs(np.asarray(o) - ref))) for o in outs.values())
                    st = time_group(peers, repeat=3 if quick else 10,
                                    target=0.01 if quick else 0.05)
                    rows.append({"model": name, "batch": batch, "max_abs_diff": diff,
                                 **{k: v for k, v in st.items()}})
    finally:
        if torch is not None:
            torch.set_num_threads(threads)
    return rows


def markdown(rows):
    peers = [p for p in ("dualgrad", "onnxruntime", "torch") if any(p in r for r in rows)]
    head = "| model | batch | " + " | ".join(f"{p} (ms)" for p in peers) + \
        " | dualgrad / onnxruntime |"
    lines = [head, "|" + " --- |" * (len(peers) + 3)]
    for r in rows:
        ms = [f"{r[p]['median_s'] * 1e3:.3f}" if p in r else "-" for p in peers]
        ratio = (f"{r['dualgrad']['median_s'] / r['onnxruntime']['median_s']:.1f}x"
                 if "onnxruntime" in r else "-")
        lines.append(f"| {r['model']} | {r['batch']} | " + " | ".join(ms) + f" | {ratio} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m dualgrad.comparisons.bench.export",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="few repeats")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--markdown", metavar="PATH")
    args = p.parse_args(argv)
    rows = run(quick=args.quick)
    table = markdown(rows)
    print(table)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": platform.platform(), "cpus": os.cpu_count(), "rows": rows},
                      f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`dualgrad export` and `dualgrad run-onnx`: the comparison models out, any ONNX file in.

    dualgrad export MODEL --format dualgrad|onnx --out PATH [--from eager|graph] [--epochs N]
    dualgrad run-onnx FILE --input x=x.npy [--input mask=mask.npy] [--save out.npz]
"""
from __future__ import annotations

import os

import numpy as np

from .errors import CliError, UsageError
from .exports import GRAPH_MODELS, MODELS


def add_parsers(sub):
    e = sub.add_parser("export", help="export a comparison model (dualgrad format or ONNX)",
                       description="Export a comparison model for inference: its eager code "
                       "through compiler.export, or its TF1 graph with the variables frozen.")
    e.add_argument("model", choices=MODELS, metavar="MODEL", help=", ".join(MODELS))
    e.add_argument("--format", choices=("dualgrad", "onnx"), default="dualgrad",
                   help="dualgrad: PATH.json + PATH.safetensors; onnx: one .onnx file")
    e.add_argument("--out", required=True, metavar="PATH", help="where to write")
    e.add_argument("--from", dest="source", choices=("eager", "graph"), default="eager",
                   help="export the eager code (default) or the TF1 graph")
    e.add_argument("--epochs", type=int, default=0,
                   help="train this many epochs first (default 0: the seed's initial weights)")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--opset", type=int, default=17,
                   help="ONNX opset (13-28, default 17)")
    e.add_argument("--static-batch", action="store_true",
                   help="fix the batch size to the example's (eager export)")
    r = sub.add_parser("run-onnx", help="run an ONNX file through dualgrad's optimiser",
                       description="Load an ONNX file as a dualgrad graph and run it on .npy "
                       "inputs with graph.Session(optimize=True).")
    r.add_argument("file", metavar="FILE", help="the .onnx file")
    r.add_argument("--input", action="append", default=[], metavar="NAME=PATH.npy",
                   help="an input of the model, once per input")
    r.add_argument("--save", metavar="PATH.npz", help="write the outputs here (NumPy .npz)")


def _program(args):
    from dualgrad import compiler
    from . import exports
    if args.source == "eager":
        fn, example = exports.eager_program(args.model, seed=args.seed, epochs=args.epochs)
        return compiler.export(fn, example, dynamic_batch=not args.static_batch)
    if args.model not in GRAPH_MODELS:
        raise UsageError(f"{args.model} has no TF1 version; --from graph takes "
                         f"{', '.join(GRAPH_MODELS)}")
    tr, inputs, logits = exports.graph_program(args.model, seed=args.seed, epochs=args.epochs)
    return compiler.ExportedProgram.from_graph(inputs, logits, tr.sess, name=args.model)


def handle_export(args, console):
    ep = _program(args)
    if args.format == "onnx":
        written = [ep.to_onnx(args.out, opset=args.opset)]
    else:
        jpath = ep.save(args.out)
        written = [jpath, jpath[: -len(".json")] + ".safetensors"]
    console.print(f"{args.model} ({args.source}): {ep}")
    for w in written:
        console.print(f"wrote {w} ({os.path.getsize(w) / 1024:.1f} KiB)")


def _feeds(specs):
    feeds = {}
    for s in specs:
        name, sep, path = s.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"--input takes NAME=PATH.npy, got {s!r}")
        try:
            feeds[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise CliError(f"cannot read {path} for input {name!r}: {e}") from None
    return feeds


def handle_run_onnx(args, console):
    from dualgrad import graph
    og = graph.onnx.load(args.file)
    feeds = _feeds(args.input)
    missing = [k for k in og.inputs if k not in feeds]
    extra = [k for k in feeds if k not in og.inputs]
    if missing or extra:
        want = ", ".join(f"{k} {tuple(p.shape)} {p.dtype.name}" for k, p in og.inputs.items())
        raise UsageError(f"{args.file} takes inputs {want}; "
                         + (f"missing {missing}" if missing else f"no input named {extra}"))
    outs = og.run(feeds)
    for name, v in zip(og.output_names, outs):
        v = np.asarray(v)
        console.print(f"{name}: shape {v.shape} {v.dtype.name}")
        console.print(np.array2string(v.reshape(-1)[:8], precision=4) +
                      (" ..." if v.size > 8 else ""))
    if args.save:
        save_outputs(args.save, og.output_names, outs)
        console.print(f"wrote {args.save}")


def save_outputs(path, names, arrays):
    """An .npz holding each output under its own name, whatever it is (`file`,
    `allow_pickle`, a name with a slash): written member by member, not through savez's
    keyword arguments."""
    import zipfile
    from numpy.lib import format as npformat
    tmp = os.fspath(path) + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
        for name, a in zip(names, arrays):
            with z.open(name + ".npy", "w", force_zip64=True) as f:
                npformat.write_array(f, np.asanyarray(a), allow_pickle=False)
    os.replace(tmp, path)

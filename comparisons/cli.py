"""`dualgrad`: train, benchmark and look at the same models in both styles.

    dualgrad tour                                  the newcomer's first minute
    dualgrad train MODEL --mode eager|graph|compiled|all [--epochs N] [--seed S]
                         [--plot curves.png] [--logdir DIR]
    dualgrad bench [MODEL|all] [--quick] [--json PATH] [--history PATH] [--plot PATH]
    dualgrad bench --size train [MODEL|all] [--load] [--profile] [--json PATH]
    dualgrad bench --distributed [mlp|transformer|all] [--quick] [--no-torch] [--json PATH]
    dualgrad graph MODEL [--optimized] [--train] [--dot PATH.dot|PATH.svg]
    dualgrad shapes [BUG ...] [--explain] [--json PATH] [--markdown PATH]
    dualgrad check SCRIPT [ARGS ...]               shape errors before any data (meta tensors)
    dualgrad cache info|clear                      the fused-kernel cache
    dualgrad run --as torch|tf1 [--compile] SCRIPT [ARGS]   an unmodified script on dualgrad

MODEL is one of mlp, cnn, rnn, transformer (bench also takes gelu, layernorm, dispatch).
A command-line mistake prints one line and exits non-zero; set DUALGRAD_DEBUG=1 to see the
traceback of an unexpected error.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from rich.console import Console

from dualgrad import __version__

from .errors import CliError, UsageError
from .models import MODELS
from .threads import DEFAULT_BLAS_THREADS, blas_limit

BENCH_NAMES = MODELS + ("gelu", "layernorm", "dispatch")
PLOT_HINT = "pip install -e '.[plot]'"
TENSORBOARD_HINT = "pip install -e '.[tensorboard]'"
EXIT_USAGE, EXIT_ERROR = 2, 1


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="dualgrad", description="One framework, two front doors: the same models "
                "eager (PyTorch style) and graph (TensorFlow 1.x style), side by side.")
    p.add_argument("--version", action="version", version=f"dualgrad {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    t = sub.add_parser("tour", help="train the MLP both ways, compare, benchmark, shape errors")
    t.add_argument("--epochs", type=_positive, default=5, help="training epochs (default 5)")
    _blas_flag(t)

    t = sub.add_parser("train", help="train one model, with a progress bar")
    t.add_argument("model", choices=MODELS, metavar="MODEL", help=", ".join(MODELS))
    t.add_argument("--mode", choices=("eager", "graph", "compiled", "all"), default="eager",
                   help="eager (default), graph, compiled, or all three one after the other")
    t.add_argument("--epochs", type=_positive, default=None,
                   help="epochs (default: the model's own)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--no-optimize", action="store_true",
                   help="graph mode: Session(optimize=False)")
    t.add_argument("--distributed", choices=("ddp", "fsdp"), default=None,
                   help="data-parallel under `mpiexec -n N` (docs/distributed.md)")
    t.add_argument("--plot", metavar="PATH", help="loss and held-out accuracy per epoch, each "
                   f"mode one line, as an image (needs matplotlib: {PLOT_HINT})")
    t.add_argument("--logdir", metavar="DIR", help="TensorBoard logs, one run per mode in "
                   f"DIR/MODE (needs tensorboard: {TENSORBOARD_HINT})")
    _blas_flag(t)

    b = sub.add_parser("bench", help="step times side by side: eager, graph, optimised, "
                       "compiled, jax.jit, PyTorch")
    b.add_argument("what", nargs="?", default="all", choices=BENCH_NAMES + ("all",),
                   metavar="MODEL|all", help=", ".join(BENCH_NAMES) + " or all (default)")
    b.add_argument("--quick", action="store_true", help="small sizes, few repeats (< 20 s)")
    b.add_argument("--size", choices=("small", "train"), default="small",
                   help="train: the four models at the sizes people train, each column in a "
                   "process of its own (mlp, cnn, rnn = lstm, transformer = gpt; minutes)")
    b.add_argument("--json", metavar="PATH", help="write every figure and the machine here")
    b.add_argument("--history", metavar="PATH", help="append this run's medians to a history "
                   "file (a JSON list, as docs/benchmarks-history.json)")
    b.add_argument("--plot", metavar="PATH", help="bar chart of speed-ups (needs matplotlib)")
    b.add_argument("--torch-compile", action="store_true",
                   help="add a torch.compile column (model workloads; compiles for many seconds)")
    b.add_argument("--load", action="store_true",
                   help="then run the table again with a busy process on the last core, and "
                        "report each column's slow-down")
    b.add_argument("--profile", action="store_true",
                   help="split each model step into kernel, allocation and Python time")
    b.add_argument("--distributed", action="store_true",
                   help="data-parallel steps/s on 1 and 2 MPI ranks (mlp, transformer): "
                        "DDP, compiled DDP, FSDP and torch DDP (gloo); starts mpiexec itself")
    b.add_argument("--no-torch", action="store_true",
                   help="with --distributed: leave out torch's DDP")
    _blas_flag(b)

    g = sub.add_parser("graph", help="the model's graph as a tree, before/after optimisation")
    g.add_argument("model", choices=MODELS, metavar="MODEL", help=", ".join(MODELS))
    g.add_argument("--optimized", action="store_true", help="show the optimised plan too")
    g.add_argument("--train", action="store_true",
                   help="include gradients and updates (the whole training step)")
    g.add_argument("--dot", metavar="PATH", help="write Graphviz DOT, or SVG when PATH ends "
                   "in .svg (needs Graphviz's `dot`); --optimized adds PATH.optimized too")

    from .shapes.cli import add_parser as add_shapes_parser
    add_shapes_parser(sub)
    from .check_cli import add_parser as add_check_parser
    add_check_parser(sub)
    from .cache_cli import add_parser as add_cache_parser
    add_cache_parser(sub)
    from .export_cli import add_parsers as add_export_parsers
    add_export_parsers(sub)

    r = sub.add_parser("run", help="run an unmodified PyTorch or TF1 script on dualgrad "
                       "(its `import torch` / `import tensorflow` resolve to dualgrad)")
    r.add_argument("--as", dest="as_", choices=("torch", "tf1"), required=True,
                   help="torch: torch.* is dualgrad.eager; tf1: tensorflow(.compat.v1) is "
                   "dualgrad.graph")
    r.add_argument("--compile", action="store_true", help="torch: run nn.Module calls through "
                   "compile() and print the graph breaks at exit")
    r.add_argument("script", help="the script")
    r.add_argument("script_args", nargs=argparse.REMAINDER, help="its arguments")
    return p


def _parse(argv):
    """Parse; an unknown flag after a command points at that command's --help."""
    p = _parser()
    args, extra = p.parse_known_args(argv)
    if extra:
        raise UsageError(f"unrecognized arguments: {' '.join(extra)} "
                         f"(see 'dualgrad {args.command} --help')")
    return args


def _blas_flag(p):
    p.add_argument("--blas-threads", type=_natural, default=DEFAULT_BLAS_THREADS, metavar="N",
                   help=f"NumPy BLAS threads during the run (default {DEFAULT_BLAS_THREADS}; "
                   "0 = the library's default)")


def _natural(s):
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {s!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {s!r}")
    return v


def _positive(s):
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {s!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {s!r}")
    return v


def check_writable(path, what):
    """Fail early, in one line, if `path` cannot be written (before minutes of work)."""
    if not path:
        raise CliError(f"{what}: empty path")
    d = os.path.dirname(os.path.abspath(path)) or "."
    if os.path.isdir(path):
        raise CliError(f"{what} {path}: is a directory")
    if not os.path.isdir(d):
        raise CliError(f"{what} {path}: directory {d} does not exist")
    if not os.access(d, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise CliError(f"{what} {path}: not writable")


# -- commands ----------------------------------------------------------------------------------
def cmd_train(args, console):
    from .training import train
    if args.no_optimize and args.mode in ("eager", "compiled"):
        console.print(f"[yellow]warning: --no-optimize only changes graph mode; it does "
                      f"nothing with --mode {args.mode}[/]")
    if args.plot:
        check_writable(args.plot, "--plot")
        _need("matplotlib", "--plot", PLOT_HINT)
    if args.logdir:
        if os.path.exists(args.logdir) and not os.path.isdir(args.logdir):
            raise CliError(f"--logdir {args.logdir}: not a directory")
        _need("tensorboard", "--logdir", TENSORBOARD_HINT)
    if args.distributed:
        from .distributed import unsupported
        if unsupported(args.mode, args.distributed):
            raise CliError(unsupported(args.mode, args.distributed))
    try:
        train(args.model, args.mode, args.epochs, args.seed, not args.no_optimize, console,
              plot=args.plot, logdir=args.logdir, distributed=args.distributed)
    except Exception as e:   # noqa: BLE001 - one rank's failure must end every rank
        from dualgrad.ops import distributed as mpi
        if args.distributed and mpi.is_initialized():
            mpi.abort(f"{type(e).__name__}: {e} (aborting all ranks: MPI_Abort)")
        raise


def _need(module, flag, hint):
    """Fail in one line, before any work, if an optional extra is missing."""
    import importlib.util
    if importlib.util.find_spec(module) is None:
        raise CliError(f"{flag} needs {module}: {hint} (or pip install {module})")


def cmd_bench(args, console):
    if args.distributed:
        return _bench_distributed(args, console)
    if args.no_torch:
        raise UsageError("--no-torch goes with --distributed")
    if args.size == "train":
        return _bench_train(args, console)
    from .bench import report, run_bench
    from .bench.workloads import COLUMNS, DEFAULT_COLUMNS
    for path, what in ((args.json, "--json"), (args.plot, "--plot"),
                       (args.history, "--history")):
        if path is not None:
            check_writable(path, what)
    if args.plot:
        _need("matplotlib", "--plot", PLOT_HINT)
    names = BENCH_NAMES if args.what == "all" else (args.what,)
    with console.status("benchmarking…") as status:
        res = run_bench(names, quick=args.quick, blas_threads=args.blas_threads,
                        columns=COLUMNS if args.torch_compile else DEFAULT_COLUMNS,
                        load=args.load, profile=args.profile,
                        progress=lambda msg: status.update(f"benchmarking {msg}"))
    report.render(res, console)
    if args.json:
        report.write_json(res, args.json)
        console.print(f"wrote {args.json}")
    if args.history:
        from .bench import history
        history.append(args.history, history.record(res))
        console.print(f"appended this run to {args.history}")
    if args.plot:
        report.plot(res, args.plot)
        console.print(f"wrote {args.plot}")


TRAIN_NAMES = {"mlp": "mlp", "cnn": "cnn", "rnn": "lstm", "transformer": "gpt"}


def _bench_train(args, console):
    from .bench import train_report, train_tier
    for flag in ("plot", "torch_compile", "history", "quick"):
        if getattr(args, flag):
            raise UsageError(f"--{flag.replace('_', '-')} does not go with --size train")
    if args.what not in tuple(TRAIN_NAMES) + ("all",):
        raise UsageError(f"--size train runs {', '.join(TRAIN_NAMES)}; got {args.what}")
    if args.json is not None:
        check_writable(args.json, "--json")
    names = tuple(TRAIN_NAMES.values()) if args.what == "all" else (TRAIN_NAMES[args.what],)
    with console.status("benchmarking…") as status:
        res = train_tier.run_tier(names, load=args.load, profile=args.profile,
                                  blas_threads=args.blas_threads,
                                  progress=lambda msg: status.update(f"benchmarking {msg}"))
    train_report.render(res, console)
    if args.json:
        import json
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1, default=float)
        console.print(f"wrote {args.json}")


def _bench_distributed(args, console):
    from .bench import distributed
    models = distributed.MODELS if args.what == "all" else (args.what,)
    if args.what not in distributed.MODELS + ("all",):
        raise UsageError(f"bench --distributed runs {' and '.join(distributed.MODELS)}; "
                         f"got {args.what}")
    for flag in ("plot", "torch_compile", "load", "profile"):
        if getattr(args, flag):
            raise UsageError(f"--{flag.replace('_', '-')} does not go with --distributed")
    if args.json is not None:
        check_writable(args.json, "--json")
    _need("mpi4py", "--distributed", "pip install 'dualgrad[dist]'")
    if distributed.under_mpiexec():
        raise CliError("dualgrad bench --distributed starts `mpiexec -n 1` and `mpiexec -n 2` "
                       "itself: run it without mpiexec")
    with console.status("benchmarking 1 and 2 ranks…"):
        measured = distributed.measure(models, args.quick, False if args.no_torch else None)
    distributed.render(measured, console)
    if args.json:
        import json
        with open(args.json, "w") as f:
            json.dump(measured, f, indent=1)
        console.print(f"wrote {args.json}")


def cmd_graph(args, console):
    from .graphview import check_svg, show
    if args.dot is not None:
        check_writable(args.dot, "--dot")
        try:
            check_svg(args.dot)
        except RuntimeError as e:
            raise CliError(str(e)) from None
    show(args.model, args.optimized, args.train, args.dot, console)


def cmd_tour(args, console):
    from .tour import tour
    tour(console, epochs=args.epochs)


def cmd_shapes(args, console):
    from .shapes.cli import handle
    for path, what in ((args.json, "--json"), (args.markdown, "--markdown")):
        if path is not None:
            check_writable(path, what)
    handle(args, console)


def cmd_check(args, console):
    from .check_cli import handle
    handle(args, console)


def cmd_cache(args, console):
    from .cache_cli import handle
    handle(args, console)


def cmd_export(args, console):
    from .export_cli import handle_export
    handle_export(args, console)


def cmd_run_onnx(args, console):
    from .export_cli import handle_run_onnx
    handle_run_onnx(args, console)


COMMANDS = {"train": cmd_train, "bench": cmd_bench, "graph": cmd_graph, "tour": cmd_tour,
            "shapes": cmd_shapes, "check": cmd_check, "cache": cmd_cache, "export": cmd_export,
            "run-onnx": cmd_run_onnx}


def main(argv=None) -> int:
    """Entry point of the `dualgrad` console script; returns the exit status."""
    console = Console(highlight=False)
    try:
        args = _parse(argv)
        if args.command == "run":   # NOTE: the script's own output and exit status only
            from .run_as import run
            return run(args.as_, args.script, args.script_args, args.compile)
        t0 = time.perf_counter()
        with blas_limit(getattr(args, "blas_threads", 0)):
            COMMANDS[args.command](args, console)
        console.print(f"[dim]done in {time.perf_counter() - t0:.1f} s[/]")
        return 0
    except CliError as e:
        _say(f"dualgrad: error: {e}")
        return EXIT_USAGE if isinstance(e, UsageError) else EXIT_ERROR
    except KeyboardInterrupt:
        _say("dualgrad: interrupted")
        return 130
    except SystemExit as e:          # argparse's --help and --version
        return e.code if isinstance(e.code, int) else 0
    except Exception as e:  # noqa: BLE001 - the CLI's promise: one line, never a traceback
        if os.environ.get("DUALGRAD_DEBUG"):
            raise
        first = (str(e).strip().splitlines() or [""])[0]
        _say(f"dualgrad: error: {type(e).__name__}: {first} (set DUALGRAD_DEBUG=1 for the "
             f"traceback)")
        return EXIT_ERROR


def _say(line):
    print(line, file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())

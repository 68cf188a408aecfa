"""Run several programs one after the other in this process (one interpreter start and one
library import for all of them), each between `@@BEGIN path` and `@@END path status` lines;
an exception is printed there, on stdout. TF1's default graph is reset between programs."""
import runpy
import sys
import traceback

for path in sys.argv[1:]:
    print(f"@@BEGIN {path}", flush=True)
    argv, status = sys.argv, 0
    sys.argv = [path]
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except Exception:  # noqa: BLE001 - reported in the program's own section
        traceback.print_exc(file=sys.stdout)
        status = 1
    finally:
        sys.argv = argv
    tf = sys.modules.get("tensorflow.compat.v1")
    if tf is not None:
        tf.reset_default_graph()
    print(f"@@END {path} {status}", flush=True)

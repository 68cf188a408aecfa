#!/usr/bin/env python
"""Benchmark of the compiler's fused kernels: fused kernels against NumPy op by op and jax.jit.

    python -m dualgrad.comparisons.bench.codegen [--quick] [--only gelu,layernorm,softmax]
                                        [--no-compile-costs] [--json out.json]

Workloads (float32), timed side by side in one run (median of 8 repeats, 2 passes over the
peers, the method of docs/benchmarks.md):

* GELU, tanh form, 2**22 elements: 0.5*x*(1+tanh(0.7978845608*(x+0.044715*x*x*x)))
* LayerNorm over the last axis of (4096, 1024) plus a residual, gamma/beta as "col" inputs
* softmax over the last axis of (4096, 1024)

First-call costs are measured in fresh subprocesses: one with an empty kernel cache
(generate + compile) and one more with the cache it left behind (load from disk).

NOTE: glibc malloc is pinned (mmap threshold 64 MiB, no trim), as in the peers' figures, so
that 16 MiB outputs are recycled instead of page-faulted in afresh on every call (7-9 ms per
16 MiB on this VM); DUALGRAD_MALLOC=glibc turns that off.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time




from dualgrad.compiler.memory import pin_malloc  # noqa: E402
from dualgrad.comparisons.bench.timing import time_group  # noqa: E402

MALLOC = pin_malloc()


def bench_group(fns, repeat=8, passes=2, target=0.05):
    """({name: median}, {name: min}) per-call seconds, peers side by side, with a pause
    before each peer so the previous one's idle thread pool stops spinning."""
    st = time_group(fns, repeat, target, passes, settle=0.02)
    return ({n: v["median_s"] for n, v in st.items()}, {n: v["min_s"] for n, v in st.items()})

import numpy as np  # noqa: E402


from dualgrad.compiler import FusedSpec, compile_fused  # noqa: E402

R, C, N = 4096, 1024, 2**22
EPS = 1e-5


# -- the specs, as the fusion pass would hand them over ----------------------------------------
def gelu_spec() -> FusedSpec:
    f = "float32"
    return FusedSpec(
        inputs=((f, "full"),),
        nodes=(("in", 0), ("const", 0.5, f), ("const", 1.0, f), ("const", 0.7978845608, f),
               ("const", 0.044715, f),
               ("ew", "({0} * {1})", (4, 0), f),      # 5: 0.044715*x
               ("ew", "({0} * {1})", (5, 0), f),      # 6: *x
               ("ew", "({0} * {1})", (6, 0), f),      # 7: *x
               ("ew", "({0} + {1})", (0, 7), f),      # 8: x + ...
               ("ew", "({0} * {1})", (3, 8), f),      # 9
               ("ew", "tanh({0})", (9,), f),          # 10
               ("ew", "({0} + {1})", (2, 10), f),     # 11: 1 + tanh
               ("ew", "({0} * {1})", (1, 0), f),      # 12: 0.5*x
               ("ew", "({0} * {1})", (12, 11), f)),   # 13
        outputs=(13,))


def layernorm_spec() -> FusedSpec:
    f = "float32"
    return FusedSpec(
        inputs=((f, "full"), (f, "full"), (f, "col"), (f, "col")),   # x, residual, gamma, beta
        nodes=(("in", 0), ("in", 1), ("in", 2), ("in", 3),
               ("dim", "C", f), ("const", EPS, f),
               ("reduce", "sum", 0, f),               # 6
               ("ew", "({0} / {1})", (6, 4), f),      # 7: mean
               ("ew", "({0} - {1})", (0, 7), f),      # 8: xc
               ("ew", "({0} * {1})", (8, 8), f),      # 9
               ("reduce", "sum", 9, f),               # 10
               ("ew", "({0} / {1})", (10, 4), f),     # 11: var
               ("ew", "({0} + {1})", (11, 5), f),     # 12
               ("ew", "sqrt({0})", (12,), f),         # 13
               ("ew", "({0} / {1})", (8, 13), f),     # 14
               ("ew", "({0} * {1})", (14, 2), f),     # 15: * gamma
               ("ew", "({0} + {1})", (15, 3), f),     # 16: + beta
               ("ew", "({0} + {1})", (16, 1), f)),    # 17: + residual
        outputs=(17,))


def softmax_spec() -> FusedSpec:
    f = "float32"
    return FusedSpec(
        inputs=((f, "full"),),
        nodes=(("in", 0), ("reduce", "max", 0, f), ("ew", "({0} - {1})", (0, 1), f),
               ("ew", "exp({0})", (2,), f), ("reduce", "sum", 3, f),
               ("ew", "({0} / {1})", (3, 4), f)),
        outputs=(5,))


# -- references ---------------------------------------------------------------------------------
def gelu_np(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * (x * x * x))))


def layernorm_np(x, r, g, b):
    mu = x.mean(-1, keepdims=True)
    xc = x - mu
    var = (xc * xc).mean(-1, keepdims=True)
    return xc / np.sqrt(var + EPS) * g + b + r


def softmax_np(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# -- reference: the same loops written by hand in numba (the peers we measured against) ----------------
def hand_fused():
    """Hand-written numba kernels for GELU and LayerNorm: what the generator should match."""
    from numba import njit, prange

    from dualgrad.compiler.prelude import tanh_f32
    fm = {"nsz", "arcp", "contract", "afn", "reassoc"}
    c0, c1, c2, c3 = (np.float32(v) for v in (0.5, 1.0, 0.7978845608, 0.044715))
    eps = np.float32(EPS)

    @njit(parallel=True, fastmath=fm, error_model="numpy")
    def gelu(x, out):
        xf, of = x.reshape(x.size), out.reshape(out.size)
        for i in prange(xf.size):
            v = xf[i]
            of[i] = c0 * v * (c1 + tanh_f32(c2 * (v + c3 * v * v * v)))

    @njit(parallel=True, fastmath=fm, error_model="numpy")
    def layernorm(x, r, g, b, out):
        n, c = x.shape
        inv_c = np.float32(1.0) / np.float32(c)
        for i in prange(n):
            s = np.float32(0.0)
            for j in range(c):
                s += x[i, j]
            mu = s * inv_c
            v = np.float32(0.0)
            for j in range(c):
                d = x[i, j] - mu
                v += d * d
            rstd = np.float32(1.0) / np.sqrt(v * inv_c + eps)
            for j in range(c):
                out[i, j] = (x[i, j] - mu) * rstd * g[j] + b[j] + r[i, j]

    return {"gelu": gelu, "layernorm": layernorm}


def copy_kernel():
    from numba import njit, prange

    @njit(parallel=True)
    def pcopy(a, b):
        for i in prange(a.size):
            b[i] = a[i]
    return pcopy


def jax_peers():
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as e:
        return None, f"jax not importable ({e}); jax.jit column skipped"

    def ln(x, r, g, b):
        mu = x.mean(-1, keepdims=True)
        xc = x - mu
        var = (xc * xc).mean(-1, keepdims=True)
        return xc * jax.lax.rsqrt(var + EPS) * g + b + r

    fns = {
        "gelu": jax.jit(lambda x: 0.5 * x * (1 + jnp.tanh(0.7978845608 * (x + 0.044715 * x**3)))),
        "layernorm": jax.jit(ln),
        "softmax": jax.jit(lambda x: jax.nn.softmax(x, axis=-1)),
    }
    return (fns, jnp), f"jax {jax.__version__}"


# -- timing (median of repeats, peers side by side) ---------------------------------------------




def first_call(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


# -- first-call cost in a fresh process ----------------------------------------------------------
_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import numba
t_numba = time.perf_counter() - t0
from dualgrad.comparisons.bench.codegen import gelu_spec, layernorm_spec, softmax_spec
from dualgrad.compiler import compile_fused
res = {"import_numba_s": t_numba}
x = np.ones((4096, 1024), np.float32)
for name, spec, args in (("gelu", gelu_spec(), (x,)),
                         ("layernorm", layernorm_spec(), (x, x, x[0], x[0])),
                         ("softmax", softmax_spec(), (x,))):
    t = time.perf_counter()
    fn = compile_fused(spec)
    t_serial = time.perf_counter() - t
    t = time.perf_counter()
    fn(4096, 1024, *args)
    t_par = time.perf_counter() - t
    res[name] = dict(compile_fused_s=t_serial, first_parallel_call_s=t_par,
                     serial_s=fn.compile_seconds, parallel_s=fn.parallel_compile_seconds,
                     cache_hit=fn.cache_hit, parallel_cache_hit=fn.parallel_cache_hit)
res["process_s"] = time.perf_counter() - t0
print(json.dumps(res))
"""


def compile_costs():
    with tempfile.TemporaryDirectory(prefix="dualgrad-bench-cache-") as d:
        env = dict(os.environ, DUALGRAD_CACHE_DIR=d)
        runs = []
        for _ in ("cold", "warm"):
            p = subprocess.run([sys.executable, "-c", _CHILD], env=env,
                               capture_output=True, text=True, timeout=600)
            if p.returncode:
                raise RuntimeError(p.stderr.strip().splitlines()[-1])
            runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    return runs


# -- main ----------------------------------------------------------------------------------------
def main():
    quick = "--quick" in sys.argv
    if not os.environ.get("DUALGRAD_CACHE_DIR"):  # first call here = a cold compile
        os.environ["DUALGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="dualgrad-bench-cache-")
    target = 0.02 if quick else 0.05
    rng = np.random.default_rng(0)
    x1 = (rng.standard_normal(N) * 3).astype(np.float32).reshape(R, C)
    x = (rng.standard_normal((R, C)) * 2 + 1).astype(np.float32)
    r = rng.standard_normal((R, C)).astype(np.float32)
    g = rng.uniform(0.5, 1.5, C).astype(np.float32)
    b = rng.uniform(-0.5, 0.5, C).astype(np.float32)
    jx, jax_note = jax_peers()
    hand, pcopy = hand_fused(), copy_kernel()

    work = {
        "gelu": (gelu_spec(), (x1,), gelu_np, (x1,)),
        "layernorm": (layernorm_spec(), (x, r, g, b), layernorm_np, (x, r, g, b)),
        "softmax": (softmax_spec(), (x,), softmax_np, (x,)),
    }
    if "--only" in sys.argv:
        keep = sys.argv[sys.argv.index("--only") + 1].split(",")
        work = {k: v for k, v in work.items() if k in keep}
    rows, out_json, timing = [], [], {}
    load0 = os.getloadavg()[0]
    for name, (spec, args, ref_fn, ref_args) in work.items():
        ref = ref_fn(*(a.astype(np.float64) for a in ref_args))
        t_compile, fn = first_call(lambda: compile_fused(spec))
        buf = np.empty((R, C), np.float32)
        peers = {
            "numpy op by op": lambda: ref_fn(*ref_args),
            "dualgrad fused": lambda: fn(R, C, *args),
            "dualgrad fused, out=": lambda: fn(R, C, *args, out=(buf,)),
        }
        errs = {"numpy op by op": ref_fn(*ref_args), "dualgrad fused": fn(R, C, *args)[0]}
        if name in hand:
            h = hand[name]
            h(*args, buf)
            errs["numba hand-fused, out= (reference)"] = buf.copy()
            peers["numba hand-fused, out= (reference)"] = lambda: h(*args, buf)
        # bound: a 2-thread copy moving the same bytes (reads of full inputs + the write)
        n_full = sum(a.ndim == 2 for a in args) + 1
        src = np.ones(n_full * R * C // 2, np.float32)
        dst = np.empty_like(src)
        pcopy(src, dst)
        peers[f"BOUND: 2-thread copy moving the same bytes ({n_full} x 16 MiB)"] = \
            lambda: pcopy(src, dst)
        if jx is not None:
            fns, jnp = jx
            jargs = tuple(jnp.asarray(a) for a in args)
            jf = fns[name]
            t_jax, y = first_call(lambda: jf(*jargs).block_until_ready())
            peers["jax.jit"] = lambda: jf(*jargs).block_until_ready()
            errs["jax.jit"] = np.asarray(y)
        st, st_min = bench_group(peers, target=target)
        timing[name] = fn.timing
        base = st["numpy op by op"]
        for peer, sec in st.items():
            e = errs.get(peer, errs["dualgrad fused"] if not peer.startswith("BOUND") else ref)
            row = {"workload": name, "peer": peer, "median_ms": sec * 1e3,
                   "min_ms": st_min[peer] * 1e3,
                   "speedup_vs_numpy": base / sec,
                   "x_jax": sec / st["jax.jit"] if "jax.jit" in st else None,
                   "max_abs_err": float(np.max(np.abs(np.asarray(e, np.float64) - ref)))}
            if peer == "dualgrad fused":
                row["first_call_s"] = t_compile + (fn.parallel_compile_seconds or 0.0)
            if peer == "jax.jit":
                row["first_call_s"] = t_jax
            rows.append(row)
        out_json += rows[-len(st):]

    print(f"\n### compiler fused kernels vs NumPy and jax.jit "
          f"(float32; malloc {MALLOC}; {jax_note}; 1-min load average {load0:.1f} at start, "
          f"{os.getloadavg()[0]:.1f} at end on {os.cpu_count()} CPUs)\n")
    head = ["workload", "peer", "median ms", "min ms", "speedup vs numpy", "x jax.jit time",
            "first call s", "max abs err"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for w in rows:
        cells = [w["workload"], w["peer"], f"{w['median_ms']:.3f}", f"{w['min_ms']:.3f}",
                 f"{w['speedup_vs_numpy']:.2f}",
                 "-" if w["x_jax"] is None else f"{w['x_jax']:.2f}",
                 f"{w['first_call_s']:.3f}" if "first_call_s" in w else "-",
                 f"{w['max_abs_err']:.2e}"]
        print("| " + " | ".join(cells) + " |")

    print("\nserial vs parallel kernel, smoothed ns per element (the faster one runs):")
    for name, t in timing.items():
        print(f"  {name}: " + ", ".join(f"{k} {v:.3f}" if v is not None else f"{k} -"
                                        for k, v in t.items()))
    if "--no-compile-costs" in sys.argv:
        return
    costs = compile_costs()
    print("\n### first-call cost in a fresh process (serial kernel in compile_fused, parallel "
          "kernel on the first 4096x1024 call)\n")
    print("| process | workload | compile_fused s | first parallel call s | cache hit |")
    print("|---|---|---|---|---|")
    for label, run in zip(("1st (empty cache)", "2nd (cache on disk)"), costs):
        for name in ("gelu", "layernorm", "softmax"):
            c = run[name]
            hits = f"{c['cache_hit']}/{c['parallel_cache_hit']}"
            print(f"| {label} | {name} | {c['compile_fused_s']:.3f} | "
                  f"{c['first_parallel_call_s']:.3f} | {hits} |")
        print(f"| {label} | whole process (import numba {run['import_numba_s']:.2f} s) | "
              f"{run['process_s']:.2f} | | |")
    out_json.append({"workload": "compile", "runs": costs})
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump(out_json, f, indent=1)


if __name__ == "__main__":
    main()

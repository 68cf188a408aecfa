"""`dualgrad cache info|clear`: the fused-kernel cache (see compiler/kernel_cache.py).

    dualgrad cache info     where the cache is, whether it is trusted, its size and entries
    dualgrad cache clear    delete the cache's own files (nothing else in the directory)
"""
from __future__ import annotations


def add_parser(subparsers):
    p = subparsers.add_parser("cache", help="the fused-kernel cache: info or clear",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("action", choices=("info", "clear"), help="info (default) or clear",
                   nargs="?", default="info")
    return p


def handle(args, console):
    from dualgrad.compiler import kernel_cache
    if args.action == "clear":
        r = kernel_cache.clear()
        console.print(f"removed {r['removed']} files ({_size(r['bytes'])}) from "
                      f"{r['location']}/kernels")
        return
    i = kernel_cache.info()
    trust = "yes" if i["trusted"] else f"no ({i['problem']}): kernels compile elsewhere"
    console.print(f"location     {i['kernels_dir']}")
    console.print(f"trusted      {trust}")
    console.print(f"entries      {i['entries']} kernels, {i['numba_files']} numba cache files")
    console.print(f"size         {_size(i['bytes'])}")


def _size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024

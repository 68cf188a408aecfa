"""What the optimiser did, pass by pass: node counts before and after, and details."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PassRecord:
    name: str
    nodes_before: int
    nodes_after: int
    details: dict
    seconds: float = 0.0

    def summary(self) -> str:
        d = self.details
        if self.name == "prune":
            return f"removed {d['removed']} unneeded nodes"
        if self.name == "constant_fold":
            return f"folded {d['folded']} constant nodes"
        if self.name == "simplify":
            r = d["rewrites"]
            return ", ".join(f"{k} x{v}" for k, v in sorted(r.items())) or "nothing to simplify"
        if self.name == "cse":
            return f"merged {d['merged']} duplicate nodes"
        if self.name == "layout":
            return (f"copied {d['copied']} shared transposes, computed "
                    f"{d.get('transposed_products', 0)} products transposed")
        if self.name == "fuse":
            s = f"{d['groups']} fused groups of sizes {d['sizes']}"
            if d["unfused"]:
                s += f"; left unfused: {'; '.join(d['unfused'])}"
            return s
        if self.name == "remat":
            return (f"budget {d['budget'] / 2**20:.2f} MiB: peak {d['unbudgeted'] / 2**20:.2f} "
                    f"-> {d['peak'] / 2**20:.2f} MiB, {d['recomputed']} nodes recomputed, "
                    f"{d['moved']} moved earlier")
        if self.name == "buffers":
            return (f"{d['buffers']} preallocated buffers ({d['shared']} shared), "
                    f"{d['bytes_per_run'] / 2**20:.2f} MiB of intermediates no longer "
                    f"allocated per run")
        return str(d)


@dataclass
class Report:
    """`nodes_before`, `nodes_after`, and `passes` (one PassRecord per pass, in order)."""
    nodes_before: int
    nodes_after: int
    passes: list = field(default_factory=list)
    note: str = ""
    seconds: float = 0.0
    program: object = None
    memory: object = None     # the plan's MemoryReport (compiler/plan_memory.py)

    def __getitem__(self, name):
        for p in self.passes:
            if p.name == name:
                return p
        raise KeyError(name)

    def __str__(self):
        lines = [f"optimised {self.nodes_before} -> {self.nodes_after} nodes "
                 f"in {self.seconds * 1e3:.1f} ms" + (f" ({self.note})" if self.note else "")]
        for p in self.passes:
            lines.append(f"  {p.name:<13} {p.nodes_before:>5} -> {p.nodes_after:<5} "
                         f"{p.summary()}")
        return "\n".join(lines)

    def __rich__(self):
        from rich.table import Table
        t = Table(title=f"optimiser: {self.nodes_before} -> {self.nodes_after} nodes",
                  caption=self.note or None)
        for col in ("pass", "before", "after", "what it did"):
            t.add_column(col, justify="right" if col in ("before", "after") else "left")
        for p in self.passes:
            t.add_row(p.name, str(p.nodes_before), str(p.nodes_after), p.summary())
        return t

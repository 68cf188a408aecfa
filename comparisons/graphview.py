"""`dualgrad graph MODEL`: the graph version of a model as a tree of name scopes, before and
(with --optimized) after the optimiser, and as Graphviz DOT (SVG too when `dot` exists)."""
from __future__ import annotations

import os
import shutil
import subprocess

from rich.tree import Tree

from dualgrad.ops.core import Spec, fmt_shape

from .models.common import TASKS
from .training import make_trainer

MAX_LEAVES = 30   # per scope; the rest is counted


def needed(fetches):
    """The graph nodes the fetches depend on, in creation order."""
    seen, stack = {}, [getattr(f, "node", f) for f in fetches]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen[id(n)] = n
        stack.extend(t.node for t in n.inputs)
        stack.extend(n.control_inputs)
    return sorted(seen.values(), key=lambda n: n.id)


def _out(node):
    return ", ".join(f"{fmt_shape(t.spec)} {t.dtype}" for t in node.outputs) or "-"


def tree(title, items) -> Tree:
    """items: (scoped name, label) pairs -> a rich Tree, one branch per name scope."""
    root = Tree(title)
    branches, counts = {(): root}, {}
    for name, label in items:
        parts = tuple(name.split("/"))
        for k in range(1, len(parts)):
            key = parts[:k]
            if key not in branches:
                branches[key] = branches[key[:-1]].add(f"[bold]{parts[k - 1]}/[/]")
        parent = parts[:-1]
        counts[parent] = counts.get(parent, 0) + 1
        if counts[parent] <= MAX_LEAVES:
            branches[parent].add(f"{parts[-1]}  [cyan]{label}[/]")
        elif counts[parent] == MAX_LEAVES + 1:
            branches[parent].add("[dim]…[/]")
    return root


def before_tree(nodes, what) -> Tree:
    items = [(n.name, f"{n.type}  {_out(n)}") for n in nodes]
    return tree(f"[bold]{what}[/]: {len(nodes)} nodes as built", items)


def after_tree(report, plan, what) -> Tree:
    prog = getattr(report, "program", None)
    items = []
    if prog is not None:
        for n in prog.nodes:
            if n.kind == "feed":
                continue
            origin = getattr(n, "origin", None)
            name = origin.name if origin is not None else n.name
            label = n.kind if n.kind != "op" else n.name
            members = getattr(n, "members", ())
            if n.kind == "fused" and members:
                label = f"fused ({len(members)} ops: {', '.join(m.name for m in members)})"
            items.append((name, f"{label}  {fmt_shape(n.specs[0]) if n.specs else ''}"))
    else:
        items = [(s.node.name, s.node.type) for s in plan.steps]
    return tree(f"[bold]{what}[/]: {len(items)} nodes after the optimiser", items)


def feed_specs(nodes, batch):
    """Placeholder -> Spec with the unknown batch dim set to the task's batch size."""
    n = len(batch[-1])
    return {p.outputs[0]: Spec(tuple(n if d is None else d for d in p.outputs[0].spec.shape),
                               p.outputs[0].dtype)
            for p in nodes if p.type == "placeholder"}


def to_dot(nodes, name) -> str:
    keep = {id(n) for n in nodes}
    lines = [f'digraph "{name}" {{', "  rankdir=TB;",
             '  node [fontname="Helvetica", fontsize=10, shape=box];']
    for n in nodes:
        fill = {"placeholder": "#cfe2ff", "variable": "#ffe5b4", "const": "#eeeeee"}.get(
            n.type, "#f5d0d0" if getattr(n, "grad_of", None) else "#ffffff")
        label = f"{n.name}\\n{n.type}\\n{_out(n)}".replace('"', "'")
        lines.append(f'  "{n.name}" [label="{label}", style=filled, fillcolor="{fill}"];')
        for t in n.inputs:
            if id(t.node) in keep:
                lines.append(f'  "{t.node.name}" -> "{n.name}" [label="{fmt_shape(t.spec)}"];')
        for c in n.control_inputs:
            if id(c) in keep:
                lines.append(f'  "{c.name}" -> "{n.name}" [style=dashed];')
    return "\n".join(lines + ["}"]) + "\n"


def write_dot(text, path, console):
    with open(path, "w") as f:
        f.write(text)
    console.print(f"wrote {path}")
    if shutil.which("dot"):
        svg = os.path.splitext(path)[0] + ".svg"
        subprocess.run(["dot", "-Tsvg", path, "-o", svg], check=True, timeout=120)
        console.print(f"wrote {svg}")
    else:
        console.print("[dim]graphviz's `dot` is not installed: no SVG (apt-get install "
                      "graphviz, then `dot -Tsvg`)[/]")


def show(model, optimized, train, dot, console):
    trainer = make_trainer(model, "graph", optimize=False)
    fetches = [trainer.loss, trainer.train_op] if train else [trainer.loss]
    what = f"{model} {'training step' if train else 'forward + loss'}"
    nodes = needed(fetches)
    console.print(before_tree(nodes, what))
    if dot:
        write_dot(to_dot(nodes, what), dot, console)
    if not optimized:
        return
    from dualgrad.compiler import optimize
    batch = TASKS[model]().batches(0)[0]
    plan, report = optimize(trainer.graph, fetches, feed_specs(nodes, batch))
    console.print(after_tree(report, plan, what))
    console.print(report)
    if dot:
        base, ext = os.path.splitext(dot)
        write_dot(_plan_dot(plan, what), f"{base}.optimized{ext or '.dot'}", console)


def _plan_dot(plan, name) -> str:
    """The optimised plan as DOT: one box per step, edges through the value slots."""
    producer, lines = {}, [f'digraph "{name} (optimised)" {{', "  rankdir=TB;",
                           '  node [fontname="Helvetica", fontsize=10, shape=box];']
    for t, slot in plan.feed_slots:
        producer[slot] = t.node.name
        lines.append(f'  "{t.node.name}" [label="{t.node.name}\\nfeed", style=filled, '
                     f'fillcolor="#cfe2ff"];')
    for k, s in enumerate(plan.steps):
        sid = f"{s.node.name}#{k}"
        fill = "#d0f5d0" if str(s.node.type).startswith("fused") else "#ffffff"
        lines.append(f'  "{sid}" [label="{s.node.name}\\n{s.node.type}", style=filled, '
                     f'fillcolor="{fill}"];')
        for i in s.inputs:
            if i in producer:
                lines.append(f'  "{producer[i]}" -> "{sid}";')
        for o in s.outputs:
            producer[o] = sid
    return "\n".join(lines + ["}"]) + "\n"


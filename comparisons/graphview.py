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
    return ", ".join(f"{fmt_shape(t.spec)} {t.dtype.name}" for t in node.outputs) or "-"


def tree(title, items) -> Tree:
    """items: (scoped name, label) pairs -> a rich Tree, one branch per name scope."""
    root = Tree(title)
    branches, counts, totals = {(): root}, {}, {}
    for name, _ in items:
        parent = tuple(name.split("/"))[:-1]
        totals[parent] = totals.get(parent, 0) + 1
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
            branches[parent].add(f"[dim]and {totals[parent] - MAX_LEAVES} more[/]")
    return root


def before_tree(nodes, what) -> Tree:
    items = [(n.name, f"{n.type}  {_out(n)}") for n in nodes]
    fed = sum(n.type == "placeholder" for n in nodes)
    return tree(f"[bold]{what}[/]: {len(nodes)} nodes as built ({fed} placeholders, fed; "
                f"the optimiser starts from the other {len(nodes) - fed})", items)


def _specialised(n) -> bool:
    """Whether node n's shape was fixed by the feed: a dim unknown (None) in the graph as
    built is a number in the optimised plan."""
    origin = getattr(n, "origin", None)
    if origin is None or not origin.outputs or not n.specs:
        return False
    built, now = origin.outputs[0].spec.shape, n.specs[0].shape
    return len(built) == len(now) and any(b is None and d is not None
                                          for b, d in zip(built, now))


def _after_label(n) -> str:
    origin = getattr(n, "origin", None)
    if n.tag == "feed":
        label = "placeholder (fed)"
    elif n.tag == "graph" and origin is not None:
        label = origin.type                 # NOTE: a variable stays a variable
    elif n.tag == "fused" and getattr(n, "members", ()):
        label = f"fused ({len(n.members)} ops: {', '.join(m.name for m in n.members)})"
    else:
        label = n.tag if n.tag != "op" else n.name
    shape = fmt_shape(n.specs[0]) if n.specs else ""
    return f"{label}  {shape}{'*' if _specialised(n) else ''}"


def after_tree(report, plan, what) -> Tree:
    prog = getattr(report, "program", None)
    if prog is None:
        items = [(s.node.name, s.node.type) for s in plan.steps]
        return tree(f"[bold]{what}[/]: {len(items)} steps after the optimiser", items)
    items = [(n.origin.name if getattr(n, "origin", None) is not None else n.name,
              _after_label(n)) for n in prog.nodes]
    fed = sum(n.tag == "feed" for n in prog.nodes)
    marked = any(_specialised(n) for n in prog.nodes)
    return tree(f"[bold]{what}[/]: {len(items) - fed} nodes after the optimiser, as its "
                f"report counts them (+ {fed} fed placeholders)"
                + ("; * a shape specialised to the fed batch (? in the graph as built)"
                   if marked else ""), items)


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


SVG_HINT = "install Graphviz (apt-get install graphviz, brew install graphviz)"


def check_svg(path):
    """Raise before any work if `path` asks for SVG and Graphviz's `dot` is missing."""
    if path.lower().endswith(".svg") and not shutil.which("dot"):
        raise RuntimeError(f"--dot {path}: SVG is drawn by Graphviz's `dot`, which is not "
                           f"installed: {SVG_HINT}, or write DOT with --dot "
                           f"{os.path.splitext(path)[0]}.dot")


def write_dot(text, path, console):
    """DOT to `path`; SVG instead when it ends in .svg (through Graphviz's `dot`)."""
    if path.lower().endswith(".svg"):
        check_svg(path)
        subprocess.run(["dot", "-Tsvg", "-o", path], input=text, text=True, check=True,
                       timeout=120)
    else:
        with open(path, "w") as f:
            f.write(text)
    console.print(f"wrote {path}")


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


"""A plan as straight-line Python: what `Plan.run` does, written out once per plan.

`Plan.run` interprets its steps: per step it gathers the argument slots into a list, calls
the kernel inside a try, converts the result, and clears freed slots (1-2 µs per step). The
function `straight_line(plan)` writes instead holds every value in a local variable and
every kernel in a closure constant, one line per step::

    def run(state, feeds):
        s0 = feeds[T0]
        s1 = feeds[T1]
        try:
            s2 = k0(s0, s1)                         # a kernel whose result may be a scalar:
            if type(s2) is not ndarray: s2 = asarray(s2)
            s3 = k1(state, s2)                      # a stateful kernel
            s0 = None                               # freed after its last reader
            ...
        except OpError:
            raise
        except Exception as e:
            raise _failed(e, locals()) from e       # names the node of the failing line
                                                    # (simplified)
        return [s3]

Constants are bound as values, not called; a variable read is a dict lookup in the session's
values (`V.get(name)`, the read kernel runs only when the value is missing, to raise its
error), and an assign that keeps its value as is (`adopting_assign_kernel`) an item store. A failing step is found from the line the
exception left the function at, so the error names the node and its inputs' shapes exactly
as `Plan.run` does, at no cost on the path where nothing fails.
"""
from __future__ import annotations

import numpy as np

from .errors import OpError, node_error

ALWAYS_ARRAY = "returns_ndarray"   # a kernel attribute: its results are always ndarrays


def straight_line(plan):
    """A function (state, feeds) -> list of fetched values, equivalent to `plan.run`."""
    env = {"ndarray": np.ndarray, "asarray": np.asarray, "OpError": OpError}
    head = ["def run(state, feeds):"]
    for t, slot in plan.feed_slots:
        env[f"T{slot}"] = t
        head.append(f"    s{slot} = feeds[T{slot}]")
    if any(_variable_access(step) for step in plan.steps):
        head.append("    V = state.variables")
    body, line_step = [], {}
    for i, step in enumerate(plan.steps):
        line_step[len(head) + 2 + len(body)] = i
        body += _step_lines(i, step, env)
    fetched = ", ".join("None" if s is None else f"s{s}" for s in plan.fetch_slots)
    lines = head + ["    try:"] + (body or ["        pass"]) + [
        "    except OpError:", "        raise",
        "    except Exception as e:", "        err = _failed(e, locals())",
        "        if err is None:", "            raise", "        raise err from e",
        f"    return [{fetched}]"]
    env["_failed"] = _failure(plan, line_step)
    source = "\n".join(lines) + "\n"
    exec(compile(source, "<dualgrad plan>", "exec"), env)  # noqa: S102 - our own text
    fn = env["run"]
    fn.source = source
    return fn


def _variable_access(step):
    """'read' / 'store' for a step that reads a variable or stores a value as one (the
    kernels mark themselves, graph/variables.py), else None."""
    k = step.kernel
    if getattr(k, "reads_variable", None) is not None and len(step.outputs) == 1 \
            and not step.inputs:
        return "read"
    if getattr(k, "stores_variable", None) is not None and len(step.outputs) == 1 \
            and len(step.inputs) == 1:
        return "store"
    return None


def _variable_lines(i, step, env, how):
    """A variable read as a dict lookup (the kernel, which raises the uninitialised-value
    error, runs only when the value is missing), a store as an item assignment."""
    env[f"k{i}"] = step.kernel
    o = step.outputs[0]
    if how == "read":
        env[f"n{i}"] = step.kernel.reads_variable
        lines = [f"        s{o} = V.get(n{i})",
                 f"        if s{o} is None: s{o} = k{i}(state)"]
    else:
        env[f"n{i}"] = step.kernel.stores_variable
        lines = [f"        V[n{i}] = s{step.inputs[0]}", f"        s{o} = s{step.inputs[0]}"]
    return lines + [f"        s{slot} = None" for slot in step.free]


def _step_lines(i, step, env):
    how = _variable_access(step)
    if how is not None:
        return _variable_lines(i, step, env, how)
    args = [f"s{j}" for j in step.inputs]
    if step.stateful:
        args.insert(0, "state")
    outs = step.outputs
    const = getattr(step.kernel, "constant_value", None)
    if const is not None and len(outs) == 1 and type(const) is np.ndarray:
        env[f"c{i}"] = const
        lines = [f"        s{outs[0]} = c{i}"]
    else:
        env[f"k{i}"] = step.kernel
        call = f"k{i}({', '.join(args)})"
        sure = getattr(step.kernel, ALWAYS_ARRAY, False)
        if len(outs) == 1:
            lines = [f"        s{outs[0]} = {call}"]
            if not sure:
                lines.append(f"        if type(s{outs[0]}) is not ndarray: "
                             f"s{outs[0]} = asarray(s{outs[0]})")
        elif outs:
            lines = [f"        _r = {call}"]
            for k, o in enumerate(outs):
                lines.append(f"        s{o} = _r[{k}]")
                if not sure:
                    lines.append(f"        if type(s{o}) is not ndarray: s{o} = asarray(s{o})")
            lines.append("        _r = None")   # NOTE: the tuple would keep freed outputs alive
        else:
            lines = [f"        {call}"]
    lines += [f"        s{slot} = None" for slot in step.free]
    return lines


def _failure(plan, line_step):
    def failed(e, local_vars):
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != "<dualgrad plan>":
            tb = tb.tb_next
        i = line_step.get(tb.tb_lineno) if tb is not None else None
        if i is None:
            return None
        step = plan.steps[i]
        return node_error(step.node, [local_vars.get(f"s{j}") for j in step.inputs], e)
    return failed

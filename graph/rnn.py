"""TF1's recurrent drivers: `static_rnn`, `dynamic_rnn` (a `while_loop`), and
`bidirectional_dynamic_rnn`, over the cells of graph/rnn_cell.py.

With `sequence_length`, steps past a sequence's end give zero outputs and carry its state
through unchanged, so the final state is the one at each sequence's last step, as in TF1.
Variables are named as TF1 names them: `rnn/<cell>/kernel`, `bidirectional_rnn/fw/<cell>/…`.

>>> import numpy as np
>>> from dualgrad import graph
>>> x = graph.placeholder(graph.float32, (None, 5, 3))
>>> cell = graph.nn.rnn_cell.GRUCell(4)
>>> outputs, state = graph.nn.dynamic_rnn(cell, x, dtype=graph.float32)
>>> outputs.shape, state.shape
(TensorShape([None, 5, 4]), TensorShape([None, 4]))
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import located
from dualgrad.ops.core import Spec, fmt_shape

from .array_ops import IDENTITY, shape as shape_of
from .control_flow import while_loop_stacked
from .select_ops import reverse_sequence
from .core import Tensor, constant
from .variable_scope import variable_scope

__all__ = ["static_rnn", "dynamic_rnn", "bidirectional_dynamic_rnn", "static_bidirectional_rnn",
           "reverse_sequence"]


def _flatten(state):
    if isinstance(state, tuple):
        return [s for part in state for s in _flatten(part)]
    return [state]


def _pack(like, flat):
    """Rebuild the nested structure of `like` from the flat list."""
    it = iter(flat)

    def build(s):
        if isinstance(s, tuple):
            parts = [build(p) for p in s]
            return type(s)(*parts) if hasattr(s, "_fields") else tuple(parts)
        return next(it)
    return build(like)


def _batch(x, axis):
    b = x.shape[axis]
    return b if b is not None else shape_of(x)[axis]


def _initial(cell, initial_state, dtype, batch, what):
    if initial_state is not None:
        return initial_state
    if dtype is None:
        raise ValueError(f"{what}: if there is no initial_state, you must give a dtype")
    return cell.zero_state(batch, dtype)


def _keep_where(alive, new, old):
    """Per example (alive: (batch, 1)): the new state while its sequence runs, else the old
    one. A scalar state (AttentionWrapper's time) and a part that declares
    `passes_through` (its alignment history, TF1's TensorArray) are the new ones, as TF1's."""
    if isinstance(new, tuple):
        if getattr(new, "passes_through", False):
            return new
        parts = [_keep_where(alive, n, o) for n, o in zip(new, old)]
        return type(new)(*parts) if hasattr(new, "_fields") else tuple(parts)
    if new.ndim == 0:
        return new
    for _ in range(new.ndim - 2):
        alive = ops.expand_dims(alive, axis=-1)
    return ops.where(alive, new, old)


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """The cell unrolled over a Python list of (batch, depth) inputs: (outputs, state)."""
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError("static_rnn: inputs must be a non-empty list of (batch, depth) tensors")
    with variable_scope(scope or "rnn"):
        state = _initial(cell, initial_state, dtype, _batch(inputs[0], 0), "static_rnn")
        outputs = []
        for t, x in enumerate(inputs):
            out, new = cell(x, state)
            if sequence_length is not None:
                alive = ops.expand_dims(ops.lt(t, sequence_length), axis=1)
                out = ops.where(alive, out, 0.0)
                new = _keep_where(alive, new, state)
            outputs.append(out)
            state = new
        return outputs, state


def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
                parallel_iterations=None, swap_memory=False, time_major=False, scope=None):
    """The cell run by a `while_loop` over the time axis of a (batch, time, depth) input
    ((time, batch, depth) with time_major): (outputs, final state)."""
    if not isinstance(inputs, Tensor) or inputs.ndim != 3:
        raise located(f"dynamic_rnn: inputs must be one 3-d tensor (batch, time, depth), got "
                      f"{inputs.shape if isinstance(inputs, Tensor) else type(inputs)}")
    depth = inputs.shape[2]
    if depth is None:
        raise located(f"dynamic_rnn: the depth of the inputs {fmt_shape(inputs.spec)} must "
                      f"be known")
    with variable_scope(scope or "rnn"):
        x = inputs if time_major else ops.transpose(inputs, axes=(1, 0, 2))   # (T, B, D)
        cell.build_with_depth(depth, inputs.dtype)
        state = _initial(cell, initial_state, dtype, _batch(x, 1), "dynamic_rnn")
        flat = _flatten(state)
        steps = x.shape[0] if x.shape[0] is not None else shape_of(x)[0]
        seq = None if sequence_length is None else ops.cast(sequence_length, np.int32)

        def body(t, *st):
            old = _pack(state, st)
            out, new = cell(ops.take(x, t, axis=0), old)
            if seq is not None:
                alive = ops.expand_dims(ops.lt(t, seq), axis=1)
                out = ops.where(alive, out, 0.0)
                new = _keep_where(alive, new, old)
            new_flat = _flatten(new)
            return (t + 1, *new_flat, out)       # out: stacked over the steps, as TF1's
                                                 # TensorArray

        t0 = constant(np.int32(0), name="time")
        res = while_loop_stacked(lambda t, *_: ops.lt(t, steps), body, [t0, *flat], 1,
                                 shape_invariants=[(), *[tuple(s.shape) for s in flat]])
        outputs = _known_steps(res[-1], x.shape[0])
        outputs = outputs if time_major else ops.transpose(outputs, axes=(1, 0, 2))
        return outputs, _pack(state, res[1:-1])


def _known_steps(acc, steps):
    """The accumulated outputs with their time length, when known, in the static shape: the
    loop's invariant had to leave it open."""
    if steps is None:
        return acc
    spec = Spec((steps,) + tuple(acc.shape[1:]), acc.dtype)
    return acc.graph.create_node(IDENTITY, (acc,), {}, [spec], "outputs").outputs[0]


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
                              initial_state_fw=None, initial_state_bw=None, dtype=None,
                              parallel_iterations=None, swap_memory=False, time_major=False,
                              scope=None):
    """((outputs_fw, outputs_bw), (state_fw, state_bw)); the backward cell reads each
    sequence reversed (its first sequence_length steps) and its outputs are put back in
    time order."""
    t_axis, b_axis = (0, 1) if time_major else (1, 0)
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw:
            out_fw, st_fw = dynamic_rnn(cell_fw, inputs, sequence_length, initial_state_fw,
                                        dtype, time_major=time_major, scope=fw)

        def rev(x):
            if sequence_length is None:
                return ops.flip(x, t_axis)
            return reverse_sequence(x, sequence_length, seq_axis=t_axis, batch_axis=b_axis)
        with variable_scope("bw") as bw:
            out_bw, st_bw = dynamic_rnn(cell_bw, rev(inputs), sequence_length,
                                        initial_state_bw, dtype, time_major=time_major,
                                        scope=bw)
        return (out_fw, rev(out_bw)), (st_fw, st_bw)


def static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None,
                             initial_state_bw=None, dtype=None, sequence_length=None,
                             scope=None):
    """(outputs, state_fw, state_bw) over a Python list of (batch, depth) inputs: each
    output is [forward output, backward output] joined on the last axis; the backward cell
    reads each sequence reversed (its first sequence_length steps), as TF1's."""
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError("static_bidirectional_rnn: inputs must be a non-empty list of "
                        "(batch, depth) tensors")

    def rev(xs):
        if sequence_length is None:
            return list(reversed(xs))
        back = reverse_sequence(ops.stack(*xs, axis=0), sequence_length, seq_axis=0,
                                batch_axis=1)
        return [ops.take(back, np.int32(t), axis=0) for t in range(len(xs))]
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw:
            out_fw, st_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype,
                                       sequence_length, scope=fw)
        with variable_scope("bw") as bw:
            out_bw, st_bw = static_rnn(cell_bw, rev(list(inputs)), initial_state_bw, dtype,
                                       sequence_length, scope=bw)
    outputs = [ops.concat(f, b, axis=1) for f, b in zip(out_fw, rev(out_bw))]
    return outputs, st_fw, st_bw

"""nn.utils.rnn: `pad_sequence` (a list of (L_i, *) tensors as one padded batch) and
torch's packed sequences: `pack_padded_sequence`, `pack_sequence`, `pad_packed_sequence`
and `PackedSequence`, which nn.RNN, nn.LSTM and nn.GRU take and give.

A PackedSequence holds torch's layout: the sequences sorted longest first, and `data` the
rows of time step 0 of every sequence, then of step 1 of those still running, …;
`batch_sizes[t]` says how many sequences run at step t.

>>> from dualgrad import eager
>>> from dualgrad.eager.nn.utils.rnn import pad_sequence, pack_padded_sequence
>>> pad_sequence([eager.ones(2), eager.ones(3)], batch_first=True).tolist()
[[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
>>> x = eager.tensor([[1.0, 2.0, 0.0], [3.0, 4.0, 5.0]])
>>> p = pack_padded_sequence(x, [2, 3], batch_first=True, enforce_sorted=False)
>>> p.data.tolist(), p.batch_sizes.tolist(), p.sorted_indices.tolist()
([3.0, 1.0, 4.0, 2.0, 5.0], [2, 2, 1], [1, 0])
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from dualgrad import ops
from ...core import Tensor


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of different lengths, padded with padding_value (gradients flow)."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    sequences = list(sequences)
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        extra = longest - s.shape[0]
        pad = (0, extra) if padding_side == "right" else (extra, 0)
        padded.append(ops.pad(s, (pad,) + ((0, 0),) * (s.ndim - 1), value=padding_value)
                      if extra else s)
    return ops.stack(*padded, axis=0 if batch_first else 1)


class PackedSequence(namedtuple("PackedSequence",
                                  "data batch_sizes sorted_indices unsorted_indices")):
    """torch's PackedSequence: (data, batch_sizes, sorted_indices, unsorted_indices)."""
    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _index(np.argsort(_ints(sorted_indices), kind="stable"))
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        return self._replace(data=self.data.to(*args, **kwargs))

    def cpu(self):
        return self

    def float(self):
        return self._replace(data=self.data.float())

    def double(self):
        return self._replace(data=self.data.double())

    @property
    def is_cuda(self):
        return False

    def is_pinned(self):
        return False


def _ints(x):
    return np.asarray(x._array if isinstance(x, Tensor) else x, dtype=np.int64).reshape(-1)


def _index(arr):
    return Tensor(np.asarray(arr, dtype=np.int64))


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):  # noqa: A002
    """The padded batch `input` ((T, B, *), or (B, T, *) with batch_first) as a
    PackedSequence of the sequences' first lengths[b] steps."""
    lengths = _ints(lengths)
    if enforce_sorted:
        if np.any(np.diff(lengths) > 0):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        order = None
    else:
        order = np.argsort(-lengths, kind="stable")
    x = input.transpose(0, 1) if batch_first else input
    if lengths.shape[0] != x.shape[1]:
        raise ValueError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                         f"{lengths.shape[0]} (batch_size={x.shape[1]})")
    if lengths.size and lengths.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if lengths.max() > x.shape[0]:
        raise RuntimeError(f"pack_padded_sequence: a length of {lengths.max()} is longer than "
                           f"the {x.shape[0]} time steps of the input")
    if order is not None:
        x, lengths = ops.take(x, order, axis=1), lengths[order]
    sizes = (lengths[None, :] > np.arange(lengths.max())[:, None]).sum(axis=1)
    return PackedSequence(packed_data(x, sizes), _index(sizes),
                          None if order is None else _index(order))


def packed_data(x, sizes):
    """The packed rows of a (T, B, *) batch sorted longest first: step t's first sizes[t]."""
    return ops.concat(*[x[t, :int(n)] for t, n in enumerate(sizes)], axis=0)


def padded(data, sizes, padding_value=0.0):
    """The (T, B, *) batch, in the packed (sorted) order, of packed rows: what packed_data
    undoes, with padding_value after each sequence's end."""
    sizes = _ints(sizes)
    batch, rows, start = int(sizes[0]), [], 0
    for n in sizes:
        n = int(n)
        step = data[start:start + n]
        start += n
        if n < batch:
            step = ops.pad(step, ((0, batch - n),) + ((0, 0),) * (data.ndim - 1),
                           value=padding_value)
        rows.append(step)
    return ops.stack(*rows, axis=0)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """(padded batch, lengths) of a PackedSequence, in the original batch order."""
    data, sizes, _, unsorted = sequence
    sizes = _ints(sizes)
    out = padded(data, sizes, padding_value)
    if total_length is not None:
        if total_length < out.shape[0]:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {out.shape[0]}")
        out = ops.pad(out, ((0, total_length - out.shape[0]),) + ((0, 0),) * (out.ndim - 1),
                      value=padding_value)
    lengths = (sizes[None, :] > np.arange(sizes[0])[:, None]).sum(axis=1)
    if unsorted is not None:
        back = _ints(unsorted)
        out, lengths = ops.take(out, back, axis=1), lengths[back]
    return (out.transpose(0, 1) if batch_first else out), _index(lengths)


def pack_sequence(sequences, enforce_sorted=True):
    """A list of (L_i, *) tensors as one PackedSequence."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of (L_i, *) tensors a PackedSequence holds, in the original order."""
    out, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return [out[b, :int(n)] for b, n in enumerate(lengths.tolist())]


__all__ = ["pad_sequence", "PackedSequence", "pack_padded_sequence", "pad_packed_sequence",
           "pack_sequence", "unpack_sequence"]

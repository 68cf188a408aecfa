"""nn.utils.rnn.pad_sequence: a list of (L_i, *) tensors as one padded batch.

>>> from dualgrad import eager
>>> from dualgrad.eager.nn.utils.rnn import pad_sequence
>>> pad_sequence([eager.ones(2), eager.ones(3)], batch_first=True).tolist()
[[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
"""
from __future__ import annotations

from dualgrad import ops


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


__all__ = ["pad_sequence"]

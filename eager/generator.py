"""torch.Generator: a random-number stream of its own, for samplers, random_split and factories.

>>> from dualgrad import eager
>>> a = eager.randperm(5, generator=eager.Generator().manual_seed(42))
>>> b = eager.randperm(5, generator=eager.Generator().manual_seed(42))
>>> a.tolist() == b.tolist()
True
"""
from __future__ import annotations

import json

import numpy as np

from dualgrad import ops


class Generator:
    """A seeded NumPy bit stream with torch.Generator's methods."""

    def __init__(self, device="cpu"):
        from .devices import device as _device
        self.device = _device(device)
        self._seed = int(np.random.SeedSequence().entropy % (2 ** 63))
        self._rng = np.random.default_rng(self._seed)

    def manual_seed(self, seed):
        self._seed = int(seed)
        self._rng = np.random.default_rng(self._seed)
        return self

    def seed(self):
        """Re-seed from fresh entropy and return the new seed (torch.Generator.seed)."""
        return self.manual_seed(np.random.SeedSequence().entropy % (2 ** 63))._seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        """The stream's state as a uint8 tensor, as torch's (opaque: set_state takes it back)."""
        return state_tensor(self._rng.bit_generator.state)

    def set_state(self, state):
        self._rng.bit_generator.state = state_dict(state)
        return self

    @property
    def rng(self) -> np.random.Generator:
        return self._rng


class _DefaultGenerator(Generator):
    """The process-wide generator that eager.manual_seed() seeds (ops' own stream)."""

    def __init__(self):
        from .devices import device as _device
        self.device = _device("cpu")
        self._seed = 0

    def manual_seed(self, seed):
        self._seed = int(seed)
        ops.manual_seed(self._seed)
        return self

    @property
    def _rng(self):
        return ops.generator()


default_generator = _DefaultGenerator()


def state_tensor(state):
    """A NumPy bit generator's state (a dict) as the bytes of its JSON, in a uint8 tensor:
    what torch's get_rng_state() / Generator.get_state() return is a ByteTensor too."""
    from .core import Tensor
    return Tensor(np.frombuffer(json.dumps(state).encode(), np.uint8).copy())


def state_dict(state):
    """The dict back from `state_tensor`'s tensor (a dict passes through)."""
    if isinstance(state, dict):
        return state
    arr = np.asarray(state.numpy() if hasattr(state, "numpy") else state)
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise TypeError(f"expected a ByteTensor (uint8, 1-d) from get_state()/get_rng_state(), "
                        f"got dtype {arr.dtype} and {arr.ndim} dims")
    try:
        out = json.loads(arr.tobytes().decode())
    except (UnicodeDecodeError, ValueError):
        out = None
    if not isinstance(out, dict) or "bit_generator" not in out:
        raise RuntimeError("set_state: not a state this library's get_state() returned")
    return out


def rng_of(generator) -> np.random.Generator:
    """The NumPy stream a factory or sampler draws from: `generator`'s, or the default one."""
    return ops.generator() if generator is None else generator.rng


def drawn(generator, shape, dtype, sample):
    """`sample(rng)` as an array of `shape` and `dtype`, drawn now from `generator`'s stream
    (the default one when None); inside a compile() trace that draws per call (its `draw`),
    a traced tensor the compiled function feeds with a new draw at every call, from the
    stream as it is then (so manual_seed() between calls is seen), in program order: a
    compiled call consumes the generator as the eager call would."""
    dtype = np.dtype(dtype)

    def now():
        return np.asarray(sample(rng_of(generator)), dtype)
    tr = ops.core.current_trace() if ops.core.TRACING[0] else None
    if tr is not None and hasattr(tr, "draw"):
        return tr.draw(now, tuple(shape), dtype)
    return now()

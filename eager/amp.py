"""torch.amp on a CPU-only machine: `autocast` and `GradScaler` as torch behaves without a
GPU. For device_type "cuda" both warn and turn themselves off, as torch's do there, so the
usual `enabled=use_amp` scripts run in float32 unchanged; CPU autocast (bfloat16 matmuls)
and CPU gradient scaling are not implemented and raise NotImplementedError.

>>> from dualgrad import eager as torch
>>> scaler = torch.amp.GradScaler("cuda", enabled=False)
>>> with torch.autocast(device_type="cpu", enabled=False):
...     loss = torch.ones(2, requires_grad=True).sum()
>>> scaler.scale(loss) is loss, scaler.get_scale(), scaler.is_enabled()
(True, 1.0, False)
"""
from __future__ import annotations

import functools
import warnings

__all__ = ["autocast", "GradScaler", "is_autocast_available"]


def is_autocast_available(device_type):
    return False


class autocast:  # noqa: N801 - torch's name
    """A context manager (and decorator) that, here, never changes a dtype: disabled, or on
    "cuda" turned off with torch's warning; enabled on "cpu" it raises."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device, self.fast_dtype, self._enabled = device_type, dtype, bool(enabled)
        if self._enabled and device_type == "cuda":
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                          "autocast.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            raise NotImplementedError(f"autocast(device_type={device_type!r}, enabled=True) "
                                      f"is not supported by dualgrad (it computes in the "
                                      f"tensors' own dtypes); pass enabled=False")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapped


class GradScaler:
    """torch's loss scaler, disabled: scale() returns its argument, step() is
    optimizer.step(), update() and unscale_() do nothing, get_scale() is 1.0. Enabled for
    "cuda" it warns and disables itself, as torch without a GPU; for "cpu" it raises."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._device, self._enabled = device, bool(enabled)
        if self._enabled and device == "cuda":
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            raise NotImplementedError(f"GradScaler({device!r}, enabled=True) is not supported "
                                      f"by dualgrad; pass enabled=False")
        self._init_scale, self._growth_factor = init_scale, growth_factor
        self._backoff_factor, self._growth_interval = backoff_factor, growth_interval

    def scale(self, outputs):
        return outputs

    def unscale_(self, optimizer):
        return None

    def step(self, optimizer, *args, **kwargs):
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        return None

    def get_scale(self):
        return 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def get_growth_interval(self):
        return self._growth_interval

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        return {}

    def load_state_dict(self, state_dict):
        return None

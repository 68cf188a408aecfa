"""torch.amp.GradScaler as torch behaves on the CPU: loss scaling with a dynamic scale.

`scale(loss)` multiplies by the scale (a float32 0-d tensor, 2**16 at first); `unscale_(opt)`
divides the optimizer's gradients by it and records whether any is inf or NaN; `step(opt)`
unscales when not done yet and skips `opt.step()` when one was; `update()` multiplies the
scale by `backoff_factor` after a skipped step, or by `growth_factor` after `growth_interval`
finite steps in a row. For "cuda" it warns and disables itself, as torch without a GPU.

>>> from dualgrad import eager as torch
>>> w = torch.nn.Parameter(torch.ones(2))
>>> opt = torch.optim.SGD([w], lr=0.1)
>>> scaler = torch.amp.GradScaler("cpu", init_scale=4.0)
>>> scaler.scale((w * 3).sum()).backward()
>>> w.grad.tolist(), scaler.step(opt), w.tolist()
([12.0, 12.0], None, [0.7000000476837158, 0.7000000476837158])
>>> scaler.update(); scaler.get_scale()
4.0
"""
from __future__ import annotations

import warnings

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import is_value

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


class GradScaler:
    """torch.amp.GradScaler(device="cuda", init_scale=2.**16, growth_factor=2.,
    backoff_factor=.5, growth_interval=2000, enabled=True)."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._device, self._enabled = device, bool(enabled)
        if self._enabled and device == "cuda":
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale, self._growth_factor = init_scale, growth_factor
        self._backoff_factor, self._growth_interval = backoff_factor, growth_interval
        self._scale = None                 # float32, made by the first scale() as torch's
        self._growth_tracker = 0
        self._per_optimizer = {}

    # -- the scale -------------------------------------------------------------------------
    def scale(self, outputs):
        """outputs (a tensor, or an iterable of them) times the scale."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale = np.float32(self._init_scale)
        return _times(outputs, self._scale)

    def _state(self, optimizer):
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _READY, "found_inf": None})

    def unscale_(self, optimizer):
        """Divide optimizer's gradients by the scale, in place; note any inf or NaN."""
        if not self._enabled:
            return
        self._check_scale("unscale_")
        st = self._state(optimizer)
        if st["stage"] is _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if st["stage"] is _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv = np.float32(1.0) / self._scale
        found = False
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.dtype == np.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                found = _unscale_grad(p, inv) or found
        st["found_inf"], st["stage"] = found, _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step() unless the unscaled gradients held an inf or NaN (then None)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale("step")
        st = self._state(optimizer)
        if st["stage"] is _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if st["stage"] is _READY:
            self.unscale_(optimizer)
        out = None if st["found_inf"] else optimizer.step(*args, **kwargs)
        st["stage"] = _STEPPED
        return out

    def update(self, new_scale=None):
        """Back off after a skipped step, grow after growth_interval good ones; or set."""
        if not self._enabled:
            return
        self._check_scale("update")
        if new_scale is not None:
            self._scale = np.float32(_new_scale(new_scale))
        else:
            found = [s["found_inf"] for s in self._per_optimizer.values()
                     if s["found_inf"] is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            self._grow_or_back_off(any(found))
        self._per_optimizer = {}

    def _grow_or_back_off(self, found_inf):
        if found_inf:
            self._scale, self._growth_tracker = self._scale * np.float32(self._backoff_factor), 0
            return
        self._growth_tracker += 1
        if self._growth_tracker == self._growth_interval:
            grown = self._scale * np.float32(self._growth_factor)
            if np.isfinite(grown):
                self._scale = grown
            self._growth_tracker = 0

    def _check_scale(self, fn):
        if self._scale is None:
            raise AssertionError(f"Attempted {fn} but _scale is None.  This may indicate your "
                                 f"script did not use scaler.scale(loss or outputs) earlier in "
                                 f"the iteration.")

    # -- what torch's scaler tells ---------------------------------------------------------
    def get_scale(self):
        if not self._enabled:
            return 1.0
        return float(self._init_scale if self._scale is None else self._scale)

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        return self._growth_tracker if self._enabled else 0

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale = np.float32(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._growth_tracker = state_dict["_growth_tracker"]


def _times(outputs, scale):
    if is_value(outputs):
        return ops.mul(outputs, np.asarray(scale))   # NOTE: a 0-d float32: bf16 stays bf16
    if isinstance(outputs, (list, tuple)):
        return type(outputs)(_times(o, scale) for o in outputs)
    if hasattr(outputs, "__iter__"):
        return map(lambda o: _times(o, scale), outputs)
    raise ValueError("outputs must be a Tensor or an iterable of Tensors")


def _unscale_grad(p, inv):
    """p.grad *= inv in place (in the gradient's dtype); True when a value is inf or NaN."""
    g = p.grad._array
    wide = g.astype(np.promote_types(g.dtype, np.float32))   # NOTE: bf16 in float32, as torch
    g[...] = (wide * inv).astype(g.dtype)
    return not np.isfinite(wide).all()


def _new_scale(new_scale):
    if isinstance(new_scale, float):
        return new_scale
    reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
              "torch.FloatTensor with requires_grad=False.")
    if new_scale.numel() != 1 or new_scale.requires_grad:
        raise AssertionError(reason)
    return float(new_scale.item())

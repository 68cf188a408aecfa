"""The base class every learning-rate scheduler derives from (torch.optim.lr_scheduler.LRScheduler)."""
from __future__ import annotations

import functools
import warnings

from .optimizer import refuse_in_trace

_BEFORE = ("Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 "
           "and later, you should call them in the opposite order: `optimizer.step()` before "
           "`lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the "
           "first value of the learning rate schedule. See more details at "
           "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate")


def _track_steps(optimizer):
    """Note on the optimizer when its step() has run (its own or a subclass's), as torch's
    schedulers do, for the warning above."""
    step = optimizer.step
    if getattr(step, "_wrapped_by_lr_sched", False):
        return

    @functools.wraps(step)
    def tracked(*args, **kwargs):
        optimizer._opt_called = True
        return step(*args, **kwargs)
    tracked._wrapped_by_lr_sched = True
    optimizer.step = tracked

__all__ = ["LRScheduler"]


class LRScheduler:
    """Base class: `step()` advances `last_epoch` and writes `get_lr()` into the groups."""

    def __init__(self, optimizer, last_epoch=-1):
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        elif any("initial_lr" not in g for g in optimizer.param_groups):
            raise KeyError("param 'initial_lr' is not specified in param_groups when resuming "
                           "an optimizer")
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        _track_steps(optimizer)
        self.last_epoch = last_epoch
        self._step_count = 0
        self._is_initial = True       # the constructor's own first step
        self.step()
        self._is_initial = False

    def get_lr(self):
        raise NotImplementedError

    def get_last_lr(self):
        return list(self._last_lr)

    def step(self, epoch=None):
        refuse_in_trace()
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(_BEFORE, UserWarning, stacklevel=2)   # NOTE: the first call only
        self._step_count += 1
        if epoch is not None:
            warnings.warn("The epoch parameter in `scheduler.step()` is deprecated (as in "
                          "PyTorch)", UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        """The next epoch's rates, or epoch's own (closed form where there is one)."""
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            values = self._closed_form() if hasattr(self, "_closed_form") else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def _initial_step(self):
        self._step_count, self._is_initial = 0, True
        self.step()
        self._is_initial = False

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)

    def _lrs(self):
        return [g["lr"] for g in self.optimizer.param_groups]


_LRScheduler = LRScheduler

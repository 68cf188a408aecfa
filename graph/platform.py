"""TF1 program scaffolding that has nothing to compute on a CPU-only, graph-only engine:
`device` (placement), the v1/v2 behaviour switches and `initialize_all_variables`.

>>> from dualgrad import graph as tf
>>> with tf.device("/gpu:0"):        # placed on the CPU, as TF with soft placement
...     x = tf.constant(1.0) + 1.0
>>> tf.Session().run(x)
np.float32(2.0)
"""
from __future__ import annotations

from contextlib import contextmanager

from .variables import global_variables, global_variables_initializer

__all__ = ["device", "disable_v2_behavior", "disable_eager_execution", "enable_eager_execution",
           "executing_eagerly", "initialize_all_variables", "VERSION"]

VERSION = "1.15.0"   # the TF1 API dualgrad.graph follows (tf.compat.v1 of TF 1.15)


@contextmanager
def device(device_name_or_function):
    """A placement scope. dualgrad computes on the CPU: every op lands there whatever the
    device asked for, as TF1 with `allow_soft_placement=True` on a machine without GPUs."""
    if not (device_name_or_function is None or callable(device_name_or_function) or
            isinstance(device_name_or_function, str)):
        raise TypeError(f"device: expected a device string or function, got "
                        f"{device_name_or_function!r}")
    yield


def disable_v2_behavior():
    """A no-op: dualgrad.graph always behaves as TF1 (graphs, sessions, placeholders)."""


disable_eager_execution = disable_v2_behavior


def enable_eager_execution(config=None, device_policy=None, execution_mode=None):
    raise NotImplementedError("enable_eager_execution: dualgrad.graph is graph-only (TF1); "
                              "write eager code with dualgrad.eager (PyTorch's API)")


def executing_eagerly():
    return False


def initialize_all_variables():
    """TF 0.x's name of global_variables_initializer()."""
    return global_variables_initializer()


def all_variables():
    """TF 0.x's name of global_variables()."""
    return global_variables()

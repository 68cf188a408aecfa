"""eager.nn.functional: the functional forms, as torch.nn.functional names them.

Every function here is the op library's own composite; nothing is reimplemented. Arguments
dualgrad does not implement raise NotImplementedError naming themselves; torch's deprecated
size_average / reduce raise a TypeError asking for reduction=.
"""
from __future__ import annotations

from ..not_provided import absent
from .core_functional import *  # noqa: F401,F403 - the activations, conv, pooling, norms, losses
from .extra_functional import *  # noqa: F401,F403 - softshrink, rms_norm, the margin losses, …
from .extra_conv3d import *  # noqa: F401,F403 - conv3d, conv_transpose3d, the 3-d pools


def __getattr__(name):
    raise absent("nn.functional", name)

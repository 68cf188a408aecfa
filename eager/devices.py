"""Devices, as PyTorch sees them on a machine without an accelerator.

dualgrad computes on the CPU only. `device("cpu")` is the one place tensors live; CUDA is
"not compiled in": `.cuda()`, `device="cuda"` and `cuda.synchronize()` raise PyTorch's own
`AssertionError("Torch not compiled with CUDA enabled")`, and `cuda.is_available()`,
`accelerator.is_available()` and `backends.mps.is_available()` are False, so the usual
`device = "cuda" if torch.cuda.is_available() else "cpu"` picks the CPU.

>>> from dualgrad import eager
>>> dev = eager.device("cuda" if eager.cuda.is_available() else "cpu")
>>> dev, eager.zeros(2, device=dev).device
(device(type='cpu'), device(type='cpu'))
"""
from __future__ import annotations

import functools
import types

from . import amp as _amp

_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
          "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
          "privateuseone")
NO_CUDA = "Torch not compiled with CUDA enabled (dualgrad computes on the CPU only)"


class device:  # noqa: N801 - torch's name
    """torch.device: a type ('cpu', 'cuda', …) and an optional index."""
    __slots__ = ("type", "index")

    def __init__(self, type, index=None):  # noqa: A002 - torch's argument name
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        if isinstance(type, int):
            raise RuntimeError("Cannot access accelerator device when none is available.")
        if not isinstance(type, str):
            raise TypeError(f"device(): expected a string or a device, got {type!r}")
        name, _, idx = type.partition(":")
        if name not in _TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_TYPES)} device type at start of "
                               f"device string: {type}")
        if idx:
            if index is not None:
                raise RuntimeError(f"device(): type {type!r} already has an index")
            index = int(idx)
        object.__setattr__(self, "type", name)
        object.__setattr__(self, "index", index)

    def __setattr__(self, name, value):
        raise AttributeError("device is immutable")

    def __eq__(self, other):
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        idx = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{idx})"


CPU = device("cpu")
META = device("meta")


# NOTE: eager/meta.py fills this when it loads ("to", "empty", "is_meta", "host", "module"):
# core, factories and nn reach the meta device through it, without importing meta.py
META_IMPL = {}


def is_meta(dev) -> bool:
    """True for the meta device (eager/meta.py), as a device or a string."""
    return dev is not None and is_device_like(dev) and device(dev).type == "meta"


def check(dev) -> device:
    """The device a tensor may be put on: the CPU, else PyTorch's CPU-only error."""
    if dev is None:
        return CPU
    dev = dev if isinstance(dev, device) else device(dev)
    if dev.type == "cpu":
        return CPU
    if dev.type == "cuda":
        raise AssertionError(NO_CUDA)
    raise RuntimeError(f"device {str(dev)!r} is not available: dualgrad computes on the CPU "
                       f"only")


def is_device_like(x) -> bool:
    """True for a device or a string naming one (what `.to(x)` takes as a device)."""
    if isinstance(x, device):
        return True
    return isinstance(x, str) and x.partition(":")[0] in _TYPES


def _no_cuda(*args, **kwargs):
    raise AssertionError(NO_CUDA)


def _nothing(*args, **kwargs):
    """Seeding CUDA on a machine without it does nothing, as in PyTorch (lazy init)."""


def _false(*args, **kwargs):
    return False


cuda = types.ModuleType("dualgrad.eager.cuda", "torch.cuda on a CPU-only machine")
cuda.is_available = _false
cuda.is_bf16_supported = _false
cuda.is_initialized = _false
cuda.device_count = lambda: 0
cuda.manual_seed = cuda.manual_seed_all = cuda.empty_cache = _nothing
# NOTE: torch's CPU build answers its allocator's counters without CUDA (0, an empty dict)
cuda.memory_allocated = cuda.max_memory_allocated = cuda.memory_reserved = \
    cuda.max_memory_reserved = lambda device=None: 0
cuda.memory_stats = lambda device=None: {}
for _name in ("synchronize", "current_device", "get_device_name", "get_device_properties",
              "set_device", "device", "mem_get_info", "ipc_collect", "reset_peak_memory_stats",
              "reset_max_memory_allocated"):
    setattr(cuda, _name, _no_cuda)



class _CudaTensorType(type):
    """torch.cuda.FloatTensor and its kin on a CPU-only build: the names exist (scripts pick
    `Tensor = cuda.FloatTensor if cuda else FloatTensor`), using one raises torch's error."""

    def __call__(cls, *args, **kwargs):
        raise TypeError(f"type torch.cuda.{cls.__name__} not available. Torch not compiled "
                        f"with CUDA enabled.")

    def __instancecheck__(cls, obj):
        return False

    @property
    def dtype(cls):   # NOTE: x.type(cuda.FloatTensor) must not cast quietly on the CPU
        raise AssertionError(NO_CUDA)


for _name in ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
              "IntTensor", "ShortTensor", "ByteTensor", "CharTensor", "BoolTensor"):
    setattr(cuda, _name, _CudaTensorType(_name, (), {"__module__": "torch.cuda"}))
cuda.is_current_stream_capturing = _false

cuda.amp = types.ModuleType("dualgrad.eager.cuda.amp", "torch.cuda.amp: disabled, as without a GPU")
cuda.amp.GradScaler = functools.partial(_amp.GradScaler, "cuda")
cuda.amp.autocast = lambda enabled=True, dtype=None, cache_enabled=True: _amp.autocast(
    "cuda", dtype, enabled, cache_enabled)
cpu = types.ModuleType("dualgrad.eager.cpu", "torch.cpu")
cpu.amp = types.ModuleType("dualgrad.eager.cpu.amp", "torch.cpu.amp")
cpu.amp.autocast = lambda enabled=True, dtype=None, cache_enabled=True: _amp.autocast(
    "cpu", dtype, enabled, cache_enabled)
cpu.amp.GradScaler = functools.partial(_amp.GradScaler, "cpu")
cpu.is_available = lambda: True

mps = types.ModuleType("dualgrad.eager.backends.mps", "torch.backends.mps: not built")
mps.is_available = mps.is_built = _false
cudnn = types.ModuleType("dualgrad.eager.backends.cudnn", "torch.backends.cudnn: not built")
cudnn.is_available = _false
cudnn.enabled, cudnn.benchmark, cudnn.deterministic = False, False, False
cudnn.allow_tf32 = True          # torch's defaults; nothing here computes in TF32
cudnn.version = lambda: None     # torch without cuDNN
cuda_backend = types.ModuleType("dualgrad.eager.backends.cuda", "torch.backends.cuda")
cuda_backend.matmul = types.SimpleNamespace(allow_tf32=False,
                                            allow_fp16_reduced_precision_reduction=True)
cuda_backend.is_built = _false
backends = types.ModuleType("dualgrad.eager.backends", "torch.backends on a CPU-only machine")
backends.mps, backends.cudnn, backends.cuda = mps, cudnn, cuda_backend

accelerator = types.ModuleType("dualgrad.eager.accelerator", "torch.accelerator: none here")
accelerator.is_available = _false
accelerator.device_count = lambda: 0
accelerator.current_accelerator = lambda check_available=False: None
_NO_ACCELERATOR = "Cannot access accelerator device when none is available."


def _no_accelerator(*args, **kwargs):
    raise RuntimeError(_NO_ACCELERATOR)


class _device_index:  # noqa: N801 - torch's name
    """torch.accelerator.device_index(i): a context that switches to accelerator i; with
    None it does nothing, as torch's; with an index it raises torch's CPU-only error."""

    def __init__(self, device, /):
        self.device = device

    def __enter__(self):
        if self.device is not None:
            _no_accelerator()

    def __exit__(self, *exc):
        return False


accelerator.set_device_index = accelerator.set_device_idx = _no_accelerator
accelerator.current_device_index = accelerator.current_device_idx = _no_accelerator
accelerator.synchronize = _no_accelerator
accelerator.device_index = _device_index


def get_default_device():
    return CPU


def set_default_device(dev):
    check(dev)

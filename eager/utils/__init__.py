"""eager.utils, as torch.utils: `data` (datasets, samplers, DataLoader), `checkpoint`
(activation checkpointing) and `tensorboard` (`SummaryWriter`; import it as
`dualgrad.eager.utils.tensorboard`, it needs the optional `tensorboard` package)."""
from . import checkpoint, data

__all__ = ["checkpoint", "data"]

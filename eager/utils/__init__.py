"""eager.utils, as torch.utils: `data` (datasets, samplers, DataLoader) and `tensorboard`
(`SummaryWriter`; import it as `dualgrad.eager.utils.tensorboard`, it needs the optional
`tensorboard` package)."""
from . import data

__all__ = ["data"]

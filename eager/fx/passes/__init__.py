"""torch.fx.passes: the passes dualgrad provides (shape_prop)."""
from . import shape_prop  # noqa: F401

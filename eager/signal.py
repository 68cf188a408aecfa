"""torch.signal: the window functions (`torch.signal.windows`, eager/signal_windows.py)."""
from . import signal_windows as windows

__all__ = ["windows"]

"""torch.distributions.utils: the helpers families share (broadcast_all, lazy_property,
probs_to_logits, logits_to_probs, clamp_probs)."""
from __future__ import annotations

from .distribution import (broadcast_all, clamp_probs, lazy_property, logits_to_probs,
                           probs_to_logits)

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs",
           "probs_to_logits"]

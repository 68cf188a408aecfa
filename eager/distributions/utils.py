"""torch.distributions.utils: the helpers families share (broadcast_all, lazy_property,
probs_to_logits, logits_to_probs, clamp_probs, vec_to_tril_matrix, tril_matrix_to_vec)."""
from __future__ import annotations

from .distribution import (broadcast_all, clamp_probs, lazy_property, logits_to_probs,
                           probs_to_logits, tril_matrix_to_vec, vec_to_tril_matrix)

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs",
           "probs_to_logits", "tril_matrix_to_vec", "vec_to_tril_matrix"]

"""nn.MultiheadAttention, as torch's (packed in_proj_weight, out_proj, masks, head-averaged
attention weights), over F.scaled_dot_product_attention's arithmetic.

>>> from dualgrad import eager
>>> from dualgrad.eager import nn
>>> mha = nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True)
>>> x = eager.randn(3, 5, 8)
>>> out, w = mha(x, x, x)
>>> tuple(out.shape), tuple(w.shape)
((3, 5, 8), (3, 5, 5))
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops
from ..core import Tensor
from .basic import Linear
from .module import Module, Parameter, _float, factory_kwargs
from . import functional as F
from . import init


def _as_tensor(mask):
    """A mask as a tensor: read with ops (a compile() tracer's values are not there to read)."""
    return mask if mask is None or isinstance(mask, Tensor) else Tensor(np.asarray(mask))


class NonDynamicallyQuantizableLinear(Linear):
    """torch's name for MultiheadAttention's out_proj (a Linear; the name shows in repr)."""


class MultiheadAttention(Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__()
        if add_bias_kv or add_zero_attn or kdim not in (None, embed_dim) \
                or vdim not in (None, embed_dim):
            raise NotImplementedError("MultiheadAttention: add_bias_kv, add_zero_attn and "
                                      "kdim/vdim different from embed_dim are not supported "
                                      "by dualgrad")
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.batch_first, self.head_dim = batch_first, embed_dim // num_heads
        # NOTE: torch's attributes for the options refused above, at the values they take here
        self.kdim = self.vdim = embed_dim
        self._qkv_same_embed_dim, self.add_zero_attn = True, False
        self.q_proj_weight = self.k_proj_weight = self.v_proj_weight = None
        self.bias_k = self.bias_v = None
        self.in_proj_weight = Parameter(np.zeros((3 * embed_dim, embed_dim), _float()))
        init.xavier_uniform_(self.in_proj_weight)
        self.in_proj_bias = Parameter(np.zeros(3 * embed_dim, _float())) if bias else None
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias)
        if bias:
            init.zeros_(self.out_proj.bias)
        factory_kwargs(self, device, dtype)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint.")
        unbatched = query.ndim == 2
        q, k, v = (ops.expand_dims(t, axis=1) if unbatched else
                   t.transpose(0, 1) if self.batch_first else t for t in (query, key, value))
        L, N, E = q.shape
        S = k.shape[0]
        w = ops.split(self.in_proj_weight, E, axis=0)
        b = ops.split(self.in_proj_bias, E, axis=0) if self.in_proj_bias is not None \
            else (None,) * 3
        heads = [self._heads(F.linear(t, wi, bi), n, N)
                 for t, wi, bi, n in zip((q, k, v), w, b, (L, S, S))]
        scores = ops.matmul(heads[0], heads[1].transpose(-2, -1)) * (self.head_dim ** -0.5)
        scores = self._masked(scores, _as_tensor(attn_mask), _as_tensor(key_padding_mask), N, L, S)
        weights = ops.softmax(scores, axis=-1)
        if self.dropout and self.training:
            weights = F.dropout(weights, self.dropout, True)
        out = ops.matmul(weights, heads[2])                       # (N, H, L, hd)
        out = ops.reshape(out.transpose(1, 2), (N, L, E)).transpose(0, 1)
        out = self.out_proj(out)
        out = ops.squeeze(out, axis=1) if unbatched else out.transpose(0, 1) \
            if self.batch_first else out
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = ops.mean(weights, axis=1)
        return out, ops.squeeze(weights, axis=0) if unbatched else weights

    def _heads(self, t, n, batch):
        """(n, N, E) -> (N, H, n, head_dim)."""
        return ops.reshape(t, (n, batch, self.num_heads, self.head_dim)).permute(1, 2, 0, 3)

    def _masked(self, scores, attn_mask, key_padding_mask, N, L, S):
        H = self.num_heads
        if attn_mask is not None:
            m = ops.reshape(attn_mask, (N, H, L, S)) if attn_mask.ndim == 3 else attn_mask
            scores = ops.masked_fill(scores, m, -np.inf) if m.dtype == np.bool_ \
                else scores + ops.cast(m, scores.dtype)
        if key_padding_mask is not None:
            m = ops.reshape(key_padding_mask, (N, 1, 1, S))
            scores = ops.masked_fill(scores, m, -np.inf) if m.dtype == np.bool_ \
                else scores + ops.cast(m, scores.dtype)
        return scores


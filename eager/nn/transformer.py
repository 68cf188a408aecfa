"""torch.nn.TransformerEncoderLayer, TransformerEncoder, TransformerDecoderLayer,
TransformerDecoder and Transformer, with torch's parameter names (self_attn,
multihead_attn, linear1, linear2, norm1..norm3, encoder.layers.0…), so torch state dicts
load; `Transformer.generate_square_subsequent_mask(sz)` gives torch's causal float mask.

>>> from dualgrad import eager
>>> from dualgrad.eager import nn
>>> layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)
>>> nn.TransformerEncoder(layer, num_layers=2)(eager.randntorch.Size([3, 5, 8])).shape
(3, 5, 8)
"""
from __future__ import annotations

import copy

import numpy as np

from .basic import Dropout, LayerNorm, Linear, ModuleList
from .module import Module, factory_kwargs
from . import init
from . import functional as F
from ..core import Tensor
from .attention import MultiheadAttention

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _build(layer, d_model, nhead, dim_feedforward, dropout, activation, eps, batch_first,
           norm_first, bias, cross):
    """An encoder layer's modules (a decoder layer's with cross=True: attention over the
    memory, a third norm and dropout), registered in torch's order so state dicts match."""
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise RuntimeError(f"activation should be relu/gelu, not {activation}")
        activation = _ACTIVATIONS[activation]

    def attention():
        return MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                  batch_first=batch_first)
    layer.self_attn = attention()
    if cross:
        layer.multihead_attn = attention()
    layer.linear1 = Linear(d_model, dim_feedforward, bias=bias)
    layer.dropout = Dropout(dropout)
    layer.linear2 = Linear(dim_feedforward, d_model, bias=bias)
    layer.norm_first = norm_first
    for name in ("norm1", "norm2", "norm3")[:3 if cross else 2]:
        setattr(layer, name, LayerNorm(d_model, eps=eps, bias=bias))
    for name in ("dropout1", "dropout2", "dropout3")[:3 if cross else 2]:
        setattr(layer, name, Dropout(dropout))
    layer.activation, layer.batch_first = activation, batch_first


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual connection and a
    LayerNorm: after the sum (post-norm, torch's default) or before the block (norm_first)."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        _build(self, d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
               batch_first, norm_first, bias, cross=False)
        factory_kwargs(self, device, dtype)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerEncoder(Module):
    """num_layers deep copies of encoder_layer, then an optional final norm.

    enable_nested_tensor only selects torch's inference fast path; dualgrad always computes
    the plain path, which gives every position (padded ones too) its computed value.
    """

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check
        self.use_nested_tensor = False    # NOTE: torch's fast path flag; dualgrad has none

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                        is_causal=bool(is_causal))
        return self.norm(out) if self.norm is not None else out


class TransformerDecoderLayer(Module):
    """Self-attention on the target, attention over the encoder's memory, a feed-forward
    block; each with a residual connection and a LayerNorm (post-norm, or norm_first)."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        _build(self, d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
               batch_first, norm_first, bias, cross=True)
        factory_kwargs(self, device, dtype)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        sa = (tgt_mask, tgt_key_padding_mask, tgt_is_causal)
        mha = (memory, memory_mask, memory_key_padding_mask, memory_is_causal)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), *sa)
            x = x + self._mha_block(self.norm2(x), *mha)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, *sa))
        x = self.norm2(x + self._mha_block(x, *mha))
        return self.norm3(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, need_weights=False,
                                is_causal=is_causal)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoder(Module):
    """num_layers deep copies of decoder_layer, then an optional final norm."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                        tgt_key_padding_mask=tgt_key_padding_mask,
                        memory_key_padding_mask=memory_key_padding_mask,
                        tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return self.norm(out) if self.norm is not None else out


class Transformer(Module):
    """torch.nn.Transformer: an encoder and a decoder stack, each ending in a LayerNorm;
    every weight matrix starts xavier-uniform, as torch's _reset_parameters."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation=F.relu, custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        super().__init__()
        common = dict(dropout=dropout, activation=activation, layer_norm_eps=layer_norm_eps,
                      batch_first=batch_first, norm_first=norm_first, bias=bias, device=device,
                      dtype=dtype)
        kw = dict(eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            TransformerEncoderLayer(d_model, nhead, dim_feedforward, **common),
            num_encoder_layers, LayerNorm(d_model, **kw))
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            TransformerDecoderLayer(d_model, nhead, dim_feedforward, **common),
            num_decoder_layers, LayerNorm(d_model, **kw))
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        batch = 0 if self.batch_first else 1
        if src.dim() == 3 and src.shape[batch] != tgt.shape[batch]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """(sz, sz) float mask: -inf above the diagonal (a position sees no later one), 0
        elsewhere."""
        from .module import _float
        dt = np.dtype(_float() if dtype is None else dtype)
        return Tensor(np.triu(np.full((sz, sz), -np.inf, dt), k=1))

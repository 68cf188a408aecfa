"""Every module class that both torch.nn and dualgrad.eager.nn export, built with configurations
GENERATED from one base configuration per class: each keyword of torch's signature varied one
at a time over a few values (VARY), plus pairs that interact (PAIRS), plus device= and dtype=
for every class whose torch signature takes them. For each configuration, against torch:

- construction: where torch raises, dualgrad raises the same exception type;
- state_dict: the same keys, shapes and dtypes (torch's weights are then loaded into ours);
- repr(module) == repr(torch_module);
- in train and in eval mode, for float32 and float64 (the modules cast with .to), for each
  input form (batched, unbatched, ...): forward values, output dtypes and shapes (or the
  same exception type), the gradients of every float input and every parameter, and the
  state_dict after the forward (running statistics, num_batches_tracked, max_norm's renorm).
  Random layers (Dropout*, dropout > 0 in train mode) compare shapes, dtypes, scaling,
  zeroed fraction and the gradient's mask only.

A keyword dualgrad refuses on purpose is a REFUSED row (its exception type and message are
checked; the row fails once dualgrad accepts the keyword); a difference not fixed is a KNOWN
row with its reason, which fails once the case agrees. test_every_keyword_is_varied fails
when torch's signature has a keyword no configuration varies (or NOT_VARIED explains).

Budget: one base input per form, sizes of a few elements, one or two values per keyword and
a handful of pairs per class keep this file near 40 s on a 2-core machine.
"""
from __future__ import annotations

import inspect
import itertools
import math
import re
import warnings

import numpy as np
import pytest

from dualgrad import eager

torch = pytest.importorskip("torch")

# -- how a configuration is written ---------------------------------------------------------


class Lib:
    """A value that is built in each library: `Lib("LayerNorm(8)")` is torch.nn.LayerNorm(8)
    for torch and nn.LayerNorm(8) for dualgrad (names: the nn classes, tensor, float64, F)."""

    def __init__(self, src):
        self.src = src

    def __repr__(self):
        return self.src

    def build(self, lib):
        names = {n: getattr(lib.nn, n) for n in dir(lib.nn) if not n.startswith("_")}
        names.update(tensor=lib.tensor, ones=lib.ones, float64=lib.float64, F=lib.nn.functional,
                     Parameter=lib.nn.Parameter)
        return eval(self.src, names)


def f(*shape, low=None):
    """A float input that requires grad (normal, or uniform in [low, 1))."""
    return ("f", shape, low)


def c(*shape, low=None):
    """A float input that does not require grad (targets)."""
    return ("c", shape, low)


def i(values):
    """An integer input (indices, class targets) given by value."""
    return ("i", np.asarray(values))


def k(values):
    """A float input that does not require grad, given by value."""
    return ("k", np.asarray(values, dtype=np.float64))


def _conv_in(nd, kw, transposed=False, size=7):
    ch = kw.get("in_channels", 4)
    return {"batched": [f(2, ch, *(size,) * nd)], "unbatched": [f(ch, *(size,) * nd)]}


def _rnn_in(kw, cell=False):
    n = kw.get("input_size", 4)
    if cell:
        return {"batched": [f(3, n)], "unbatched": [f(n)]}
    batched = [f(2, 5, n)] if kw.get("batch_first") else [f(5, 2, n)]
    return {"batched": batched, "unbatched": [f(5, n)]}


def _mha_in(kw):
    e = kw.get("embed_dim", 8)
    kd, vd = kw.get("kdim") or e, kw.get("vdim") or e
    if kw.get("batch_first"):
        batched = [f(2, 4, e), f(2, 5, kd), f(2, 5, vd)]
    else:
        batched = [f(4, 2, e), f(5, 2, kd), f(5, 2, vd)]
    return {"batched": batched, "unbatched": [f(4, e), f(5, kd), f(5, vd)]}


def _seq_in(kw, *lengths):
    d = kw.get("d_model", 8)
    if kw.get("batch_first"):
        return {"batched": [f(2, n, d) for n in lengths], "unbatched": [f(n, d) for n in lengths]}
    return {"batched": [f(n, 2, d) for n in lengths], "unbatched": [f(n, d) for n in lengths]}


def _fold_in(kw):
    def pair(v):
        return tuple(v) if isinstance(v, tuple) else (v, v)
    out, ks = pair(kw.get("output_size", (4, 5))), pair(kw.get("kernel_size", 2))
    d, p, s = pair(kw.get("dilation", 1)), pair(kw.get("padding", 0)), pair(kw.get("stride", 1))
    blocks = math.prod((out[j] + 2 * p[j] - d[j] * (ks[j] - 1) - 1) // s[j] + 1 for j in (0, 1))
    return {"batched": [f(2, 3 * ks[0] * ks[1], blocks)], "unbatched": [f(3 * ks[0] * ks[1],
                                                                         blocks)]}


def _one(*items, **forms):
    return lambda kw: {"batched": list(items), **{n: list(v) for n, v in forms.items()}}


ACT = _one(f(3, 5), unbatched=[f(5)])
PAIR_IN = _one(f(4, 5), c(4, 5), unbatched=[f(5), c(5)])
PROB_IN = _one(f(4, 5, low=0.05), c(4, 5, low=0.0), unbatched=[f(5, low=0.05), c(5, low=0.0)])
SIGN = [1.0, -1.0, 1.0, -1.0]
W5 = Lib("tensor([0.5, 2.0, 1.0, 0.2, 1.5])")
REDUCTIONS = ["sum", "none", "foo"]
INPLACE = {"inplace": [True]}
POOL1 = _one(f(2, 3, 10), unbatched=[f(3, 10)])
POOL2 = _one(f(2, 3, 8, 7), unbatched=[f(3, 8, 7)])
POS1 = _one(f(2, 3, 10, low=0.1), unbatched=[f(3, 10, low=0.1)])
POS2 = _one(f(2, 3, 8, 7, low=0.1), unbatched=[f(3, 8, 7, low=0.1)])
PAD1 = _one(f(2, 3, 6), unbatched=[f(3, 6)])
PAD2 = _one(f(2, 3, 5, 6), unbatched=[f(3, 5, 6)])
ENC = "TransformerEncoderLayer(8, 2, 16, 0.0)"
DEC = "TransformerDecoderLayer(8, 2, 16, 0.0)"
CONV_VARY = dict(stride=[2, (2, 1)], padding=[1, (1, 2), "same", "valid", 4],
                 dilation=[2], groups=[2, 3], bias=[False],
                 padding_mode=["reflect", "replicate", "circular", "foo"], kernel_size=[(3, 1)])
CONV_PAIRS = [dict(groups=2, padding_mode="circular", dilation=2, stride=2, padding=2),
              dict(groups=2, padding="same", dilation=2, padding_mode="reflect"),
              dict(stride=2, padding="same"), dict(padding=(2, 1), padding_mode="replicate",
                                                   stride=(1, 2), dilation=(2, 1))]
CONVT_VARY = dict(stride=[2], padding=[1], output_padding=[1], groups=[2], bias=[False],
                  dilation=[2], padding_mode=["reflect"], kernel_size=[(3, 1)])
CONVT_PAIRS = [dict(stride=2, output_padding=1, groups=2, dilation=2, padding=1),
               dict(stride=(2, 1), output_padding=(1, 0), padding=(1, 0))]
RNN_VARY = dict(num_layers=[2], bias=[False], batch_first=[True], dropout=[0.3],
                bidirectional=[True], proj_size=[3], hidden_size=[3])
RNN_PAIRS = [dict(num_layers=2, bidirectional=True, batch_first=True),
             dict(num_layers=2, bidirectional=True, proj_size=3),
             dict(num_layers=2, dropout=0.3, batch_first=True)]
BN_VARY = dict(eps=[1e-3], momentum=[0.5, None], affine=[False], track_running_stats=[False],
               bias=[False])
BN_PAIRS = [dict(affine=False, track_running_stats=False), dict(momentum=None, eps=0.1)]
IN_VARY = dict(eps=[1e-3], momentum=[0.5], affine=[True], track_running_stats=[True],
               bias=[False])
IN_PAIRS = [dict(affine=True, track_running_stats=True, momentum=0.3),
            dict(affine=True, bias=False)]
# NOTE: the 3-d classes are capped harder than their 1-d / 2-d siblings: 4 to 6 per
# spatial dim, one or two values per keyword and at most two pairs (their functional forms loop
# over depth slices in Python, so each case costs a few 2-d ones)
POOL3 = _one(f(2, 3, 5, 6, 5), unbatched=[f(3, 5, 6, 5)])
PAD3 = _one(f(2, 3, 4, 5, 6), unbatched=[f(3, 4, 5, 6)])
PAD3_T = (1, 2, 0, 3, 2, 0)
CONV3_VARY = dict(stride=[(2, 1, 2)], padding=[1, "same"], dilation=[2], groups=[2],
                  bias=[False], padding_mode=["reflect", "foo"], kernel_size=[(3, 1, 2)])
CONV3_PAIRS = [dict(groups=2, padding_mode="replicate", dilation=2, padding=2),
               dict(stride=2, padding=(1, 0, 2), padding_mode="circular")]
CONVT3_VARY = dict(stride=[2], padding=[1], output_padding=[1], groups=[2], bias=[False],
                   dilation=[2], padding_mode=["reflect"], kernel_size=[(3, 1, 2)])
COUNTS = k([[0, 1, 2, 3, 5], [4, 0, 1, 7, 2], [1, 1, 0, 2, 9], [3, 2, 6, 0, 1]])
LAYER_VARY = dict(dropout=[0.2], activation=["gelu", Lib("F.gelu")], layer_norm_eps=[1e-3],
                  batch_first=[True], norm_first=[True], bias=[False], dim_feedforward=[6])
LAYER_PAIRS = [dict(norm_first=True, activation="gelu", batch_first=True),
               dict(norm_first=True, bias=False)]

# class: (base keywords, inputs(kw) -> {form: [items]}, VARY, PAIRS)
SPECS = {
    # activations
    "ReLU": ({}, ACT, INPLACE, []), "ReLU6": ({}, ACT, INPLACE, []),
    "SiLU": ({}, ACT, INPLACE, []), "Mish": ({}, ACT, INPLACE, []),
    "Hardswish": ({}, ACT, INPLACE, []), "Hardsigmoid": ({}, ACT, INPLACE, []),
    "SELU": ({}, ACT, INPLACE, []), "Sigmoid": ({}, ACT, {}, []), "Tanh": ({}, ACT, {}, []),
    "LogSigmoid": ({}, ACT, {}, []), "Softsign": ({}, ACT, {}, []),
    "Tanhshrink": ({}, ACT, {}, []),
    "ELU": ({}, ACT, dict(alpha=[0.5, 2.0], inplace=[True]), [dict(alpha=0.3, inplace=True)]),
    "CELU": ({}, ACT, dict(alpha=[0.5, 2.0, 0.0], inplace=[True]), []),
    "LeakyReLU": ({}, ACT, dict(negative_slope=[0.2, -0.1], inplace=[True]),
                  [dict(negative_slope=0.3, inplace=True)]),
    "Hardtanh": ({}, ACT, dict(min_val=[-0.5], max_val=[0.3, -2.0], inplace=[True],
                              min_value=[-0.2], max_value=[0.6]),
                 [dict(min_val=-0.3, max_val=0.4, inplace=True)]),
    "GELU": ({}, ACT, dict(approximate=["tanh", "foo"]), []),
    "GLU": ({}, _one(f(4, 6), unbatched=[f(6)]), dict(dim=[0, 1, -2]), []),
    "Softplus": ({}, ACT, dict(beta=[2.0, 0.5], threshold=[1.0, 0.5]),
                 [dict(beta=3.0, threshold=0.5)]),
    "Softmax": ({"dim": 1}, ACT, dict(dim=[None, 0, -1]), []),
    "LogSoftmax": ({"dim": 1}, ACT, dict(dim=[None, 0, -1]), []),
    "Softmin": ({"dim": 1}, ACT, dict(dim=[None, 0, -1]), []),
    "PReLU": ({}, _one(f(2, 3, 4), unbatched=[f(3)]), dict(num_parameters=[3, 2],
                                                          init=[0.1, -0.5]), []),
    "Identity": ({}, ACT, dict(unused_argument=[0.1]), []),
    "Hardshrink": ({}, ACT, dict(lambd=[0.1, 1.0, -0.5]), []),
    "Softshrink": ({}, ACT, dict(lambd=[0.1, 1.0, -0.5]), []),
    "Threshold": ({"threshold": 0.1, "value": 20.0}, ACT,
                  dict(threshold=[-0.5], value=[0.0], inplace=[True]),
                  [dict(threshold=0.3, value=-1.0, inplace=True)]),
    "Softmax2d": ({}, _one(f(2, 3, 4, 2), unbatched=[f(3, 4, 2)], flat=[f(3, 4)]), {}, []),
    # layers
    "Linear": ({"in_features": 5, "out_features": 4}, _one(f(3, 5), unbatched=[f(5)],
                                                        deep=[f(2, 3, 5)]),
               dict(bias=[False], out_features=[1]), []),
    "LazyLinear": ({"out_features": 4}, _one(f(3, 5), unbatched=[f(5)], deep=[f(2, 3, 5)]),
                   dict(bias=[False], out_features=[1, 0]), []),
    "Bilinear": ({"in1_features": 4, "in2_features": 3, "out_features": 5},
                 _one(f(6, 4), f(6, 3), unbatched=[f(4), f(3)], deep=[f(2, 3, 4), f(2, 3, 3)],
                      mismatched=[f(6, 3), f(6, 4)]),
                 dict(bias=[False], out_features=[1], in1_features=[0], in2_features=[2]), []),
    "Conv3d": ({"in_channels": 4, "out_channels": 6, "kernel_size": 3},
               lambda kw: _conv_in(3, kw, size=4), CONV3_VARY, CONV3_PAIRS),
    "ConvTranspose3d": ({"in_channels": 4, "out_channels": 6, "kernel_size": 3},
                        lambda kw: _conv_in(3, kw, True, size=4), CONVT3_VARY,
                        [dict(stride=2, output_padding=1, groups=2, dilation=2, padding=1)]),
    "Conv1d": ({"in_channels": 4, "out_channels": 6, "kernel_size": 3},
               lambda kw: _conv_in(1, kw), {**CONV_VARY, "kernel_size": [5, 1]},
               [{k: v[0] if isinstance(v, tuple) else v for k, v in p.items()}
                for p in CONV_PAIRS]),
    "Conv2d": ({"in_channels": 4, "out_channels": 6, "kernel_size": 3},
               lambda kw: _conv_in(2, kw), CONV_VARY, CONV_PAIRS),
    "ConvTranspose1d": ({"in_channels": 4, "out_channels": 6, "kernel_size": 3},
                        lambda kw: _conv_in(1, kw, True), {**CONVT_VARY, "kernel_size": [2]},
                        [{k: v[0] if isinstance(v, tuple) else v for k, v in p.items()}
                         for p in CONVT_PAIRS]),
    "ConvTranspose2d": ({"in_channels": 4, "out_channels": 6, "kernel_size": 3},
                        lambda kw: _conv_in(2, kw, True), CONVT_VARY, CONVT_PAIRS),
    "Embedding": ({"num_embeddings": 10, "embedding_dim": 4},
                  _one(i([[1, 2, 3, 2], [2, 9, 0, 1]]), unbatched=[i([4, 2, 4])]),
                  dict(padding_idx=[2, -1, 10], max_norm=[1.0], norm_type=[1.0],
                       scale_grad_by_freq=[True], sparse=[True], _freeze=[True],
                       _weight=[Lib("ones(10, 4) * 0.5")]),
                  [dict(padding_idx=2, max_norm=1.0, scale_grad_by_freq=True),
                   dict(max_norm=0.5, norm_type=1.0, padding_idx=-1)]),
    "EmbeddingBag": ({"num_embeddings": 10, "embedding_dim": 4},
                     lambda kw: ({"batched": [i([1, 2, 3, 2, 9, 0]), i([0, 2, 6])]}
                                 if kw.get("include_last_offset") else
                                 {"batched": [i([[1, 2, 3], [2, 9, 2]])],
                                  "offsets": [i([1, 2, 3, 2, 9, 0]), i([0, 2])]}),
                     dict(mode=["sum", "max", "foo"], max_norm=[1.0], norm_type=[1.0],
                          scale_grad_by_freq=[True], sparse=[True], include_last_offset=[True],
                          padding_idx=[2], _weight=[Lib("ones(10, 4) * 0.5")]),
                     [dict(mode="sum", padding_idx=2, max_norm=1.0),
                      dict(mode="max", include_last_offset=True)]),
    "Dropout": ({}, _one(f(40, 50), unbatched=[f(2000)]),
                dict(p=[0.0, 0.2, 1.0, 1.5], inplace=[True]), []),
    "Dropout1d": ({}, _one(f(4, 60, 3), unbatched=[f(240, 3)]),
                  dict(p=[0.0, 0.2, 1.0, -0.1], inplace=[True]), []),
    "Dropout2d": ({}, _one(f(4, 60, 3, 2), unbatched=[f(240, 3, 2)]),
                  dict(p=[0.0, 0.2, 1.0], inplace=[True]), []),
    "Dropout3d": ({}, _one(f(4, 60, 2, 2, 2), unbatched=[f(240, 2, 2, 2)]),
                  dict(p=[0.0, 0.2, 1.0, -0.1], inplace=[True]), []),
    "AlphaDropout": ({}, _one(f(40, 50), unbatched=[f(2000)]),
                     dict(p=[0.0, 0.2, 1.0, 1.5], inplace=[True]), []),
    "FeatureAlphaDropout": ({}, _one(f(4, 60, 3), image=[f(4, 60, 2, 2)]),
                            dict(p=[0.0, 0.2, 1.0], inplace=[True]), []),
    "ChannelShuffle": ({"groups": 2}, _one(f(2, 6, 3, 2), seq=[f(2, 6, 4)], flat=[f(2, 6)]),
                       dict(groups=[3, 4]), []),
    "Flatten": ({}, _one(f(2, 3, 4, 5)), dict(start_dim=[0, 2], end_dim=[2, -2]),
                [dict(start_dim=2, end_dim=1)]),
    "Unflatten": ({"dim": 1, "unflattened_size": (2, 3)}, _one(f(4, 6, 6)),
                  dict(dim=[-1], unflattened_size=[(3, -1), (4, 2)]), []),
    "Fold": ({"output_size": (4, 5), "kernel_size": 2}, _fold_in,
             dict(dilation=[2], padding=[1], stride=[2], kernel_size=[(2, 3)]),
             [dict(dilation=(1, 2), padding=(1, 0), stride=(2, 1))]),
    "Unfold": ({"kernel_size": 2}, _one(f(2, 3, 6, 7), unbatched=[f(3, 6, 7)]),
               dict(dilation=[2], padding=[1], stride=[2], kernel_size=[(2, 3)]),
               [dict(dilation=(1, 2), padding=(1, 0), stride=(2, 1))]),
    "PixelShuffle": ({"upscale_factor": 2}, _one(f(2, 36, 3, 2), unbatched=[f(36, 3, 2)]),
                     dict(upscale_factor=[3, 5]), []),
    "PixelUnshuffle": ({"downscale_factor": 2}, _one(f(2, 2, 6, 6), unbatched=[f(2, 6, 6)]),
                       dict(downscale_factor=[3, 4]), []),
    "Upsample": ({"scale_factor": 2}, _one(f(2, 3, 3, 4), unbatched=[f(3, 3, 4)],
                                           one_d=[f(2, 3, 4)]),
                 dict(size=[(5, 7)], scale_factor=[3, 1.5], recompute_scale_factor=[True]),
                 [dict(size=(5, 7), scale_factor=None)]),
    "UpsamplingNearest2d": ({"scale_factor": 2}, _one(f(2, 3, 3, 4)),
                            dict(size=[(5, 7)], scale_factor=[3]),
                            [dict(size=(5, 7), scale_factor=None)]),
    "UpsamplingBilinear2d": ({"scale_factor": 2}, _one(f(2, 3, 3, 4)),
                             dict(size=[(5, 7)], scale_factor=[3, 1.5]),
                             [dict(size=(5, 7), scale_factor=None)]),
    # normalisation
    "BatchNorm3d": ({"num_features": 3}, _one(f(4, 3, 2, 3, 2), unbatched=[f(3, 2, 3, 2)]),
                    BN_VARY, BN_PAIRS),
    "InstanceNorm3d": ({"num_features": 3}, _one(f(2, 3, 3, 4, 2), unbatched=[f(3, 3, 4, 2)]),
                       IN_VARY, IN_PAIRS),
    "RMSNorm": ({"normalized_shape": 6}, _one(f(2, 4, 6), unbatched=[f(6)]),
                dict(normalized_shape=[[4, 6], (5,)], eps=[1e-3], elementwise_affine=[False]),
                [dict(elementwise_affine=False, eps=0.1)]),
    "LocalResponseNorm": ({"size": 3}, _one(f(2, 5, 4), image=[f(2, 5, 3, 2)], flat=[f(2, 5)]),
                          dict(size=[2, 6], alpha=[0.5], beta=[0.3], k=[2.0]),
                          [dict(size=4, alpha=1.0, beta=1.5, k=0.5)]),
    "BatchNorm1d": ({"num_features": 3}, _one(f(4, 3, 5), flat=[f(4, 3)], single=[f(1, 3)]),
                    BN_VARY, BN_PAIRS),
    "BatchNorm2d": ({"num_features": 3}, _one(f(4, 3, 2, 3), unbatched=[f(3, 2, 3)]),
                    BN_VARY, BN_PAIRS),
    "InstanceNorm1d": ({"num_features": 3}, _one(f(2, 3, 6), unbatched=[f(3, 6)]),
                       IN_VARY, IN_PAIRS),
    "InstanceNorm2d": ({"num_features": 3}, _one(f(2, 3, 4, 5), unbatched=[f(3, 4, 5)]),
                       IN_VARY, IN_PAIRS),
    "GroupNorm": ({"num_groups": 2, "num_channels": 6},
                  _one(f(3, 6, 4), flat=[f(3, 6)], image=[f(3, 6, 2, 2)]),
                  dict(eps=[1e-3], affine=[False], bias=[False], num_groups=[4]), []),
    "LayerNorm": ({"normalized_shape": 6}, _one(f(2, 4, 6), unbatched=[f(6)]),
                  dict(normalized_shape=[[4, 6], (5,)], eps=[1e-3],
                       elementwise_affine=[False], bias=[False]),
                  [dict(elementwise_affine=False, bias=False)]),
    # pooling
    "MaxPool1d": ({"kernel_size": 3}, POOL1,
                  dict(stride=[1, 2], padding=[1, 2], dilation=[2], return_indices=[True],
                       ceil_mode=[True]),
                  [dict(stride=2, padding=1, ceil_mode=True, return_indices=True),
                   dict(dilation=2, padding=1, return_indices=True)]),
    "MaxPool2d": ({"kernel_size": 3}, POOL2,
                  dict(stride=[1, (2, 1)], padding=[1, 2], dilation=[2], return_indices=[True],
                       ceil_mode=[True], kernel_size=[(2, 3)]),
                  [dict(stride=2, padding=1, ceil_mode=True, return_indices=True),
                   dict(dilation=(2, 1), padding=(1, 0), return_indices=True)]),
    "AvgPool1d": ({"kernel_size": 3}, POOL1,
                  dict(stride=[1, 2], padding=[1, 2], ceil_mode=[True],
                       count_include_pad=[False]),
                  [dict(stride=2, padding=1, ceil_mode=True, count_include_pad=False)]),
    "AvgPool2d": ({"kernel_size": 3}, POOL2,
                  dict(stride=[1, (2, 1)], padding=[1, 2], ceil_mode=[True],
                       count_include_pad=[False], divisor_override=[2, 0]),
                  [dict(stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                   dict(stride=2, padding=1, divisor_override=5, ceil_mode=True)]),
    "AdaptiveAvgPool1d": ({"output_size": 4}, POOL1, dict(output_size=[1, 3, 12]), []),
    "AdaptiveAvgPool2d": ({"output_size": (3, 4)}, POOL2,
                          dict(output_size=[1, (None, 2), 5]), []),
    "AdaptiveMaxPool1d": ({"output_size": 4}, POOL1,
                          dict(output_size=[1, 3], return_indices=[True]), []),
    "AdaptiveMaxPool2d": ({"output_size": (3, 4)}, POOL2,
                          dict(output_size=[1, (None, 2)], return_indices=[True]),
                          [dict(output_size=(2, None), return_indices=True)]),
    "LPPool1d": ({"norm_type": 2, "kernel_size": 3}, POS1,
                 dict(norm_type=[1, 3.0], stride=[1, 2], ceil_mode=[True]),
                 [dict(stride=2, ceil_mode=True, norm_type=3)]),
    "LPPool2d": ({"norm_type": 2, "kernel_size": 3}, POS2,
                 dict(norm_type=[1, 3.0], stride=[1, (2, 1)], ceil_mode=[True],
                      kernel_size=[(2, 3)]),
                 [dict(stride=2, ceil_mode=True, norm_type=3)]),
    "MaxPool3d": ({"kernel_size": 2}, POOL3,
                  dict(stride=[1, (2, 1, 1)], padding=[1], dilation=[2], return_indices=[True],
                       ceil_mode=[True], kernel_size=[(2, 3, 1)]),
                  [dict(stride=2, padding=1, ceil_mode=True, return_indices=True)]),
    "AvgPool3d": ({"kernel_size": 2}, POOL3,
                  dict(stride=[1, (2, 1, 1)], padding=[1], ceil_mode=[True],
                       count_include_pad=[False], divisor_override=[3, 0]),
                  [dict(stride=2, padding=1, ceil_mode=True, count_include_pad=False)]),
    "AdaptiveAvgPool3d": ({"output_size": (2, 3, 2)}, POOL3,
                          dict(output_size=[1, (None, 2, 3), 7]), []),
    "AdaptiveMaxPool3d": ({"output_size": (2, 3, 2)}, POOL3,
                          dict(output_size=[1, (None, 2, 3)], return_indices=[True]),
                          [dict(output_size=(2, None, 1), return_indices=True)]),
    # padding
    "ZeroPad3d": ({"padding": 1}, PAD3, dict(padding=[PAD3_T]), []),
    "ConstantPad3d": ({"padding": 1, "value": 0.5}, PAD3, dict(padding=[PAD3_T], value=[-1.0]),
                      []),
    "ReflectionPad3d": ({"padding": 1}, PAD3, dict(padding=[PAD3_T, 4]), []),
    "ReplicationPad3d": ({"padding": 1}, PAD3, dict(padding=[PAD3_T]), []),
    "CircularPad3d": ({"padding": 1}, PAD3, dict(padding=[PAD3_T, 7]), []),
    "ZeroPad1d": ({"padding": 1}, PAD1, dict(padding=[(1, 2), (0, 3)]), []),
    "ZeroPad2d": ({"padding": 1}, PAD2, dict(padding=[(1, 2, 0, 3), (2, 2)]), []),
    "ConstantPad1d": ({"padding": 1, "value": 0.5}, PAD1,
                      dict(padding=[(1, 2)], value=[-1.0, 0]), []),
    "ConstantPad2d": ({"padding": 1, "value": 0.5}, PAD2,
                      dict(padding=[(1, 2, 0, 3)], value=[-1.0]), []),
    "ReflectionPad1d": ({"padding": 1}, PAD1, dict(padding=[(1, 2), 6]), []),
    "ReflectionPad2d": ({"padding": 1}, PAD2, dict(padding=[(1, 2, 0, 3), 5]), []),
    "ReplicationPad1d": ({"padding": 1}, PAD1, dict(padding=[(1, 2), 7]), []),
    "ReplicationPad2d": ({"padding": 1}, PAD2, dict(padding=[(1, 2, 0, 3)]), []),
    "CircularPad1d": ({"padding": 1}, PAD1, dict(padding=[(1, 2), 7]), []),
    "CircularPad2d": ({"padding": 1}, PAD2, dict(padding=[(1, 2, 0, 3)]), []),
    # distances
    "CosineSimilarity": ({}, _one(f(4, 5), f(4, 5), unbatched=[f(5), f(5)]),
                         dict(dim=[0, -1], eps=[0.5]), []),
    "PairwiseDistance": ({}, _one(f(4, 5), f(4, 5), unbatched=[f(5), f(5)]),
                         dict(p=[1.0, 3.0, math.inf], eps=[0.1], keepdim=[True]),
                         [dict(p=1.0, keepdim=True)]),
    # losses
    "L1Loss": ({}, PAIR_IN, dict(reduction=REDUCTIONS), []),
    "MSELoss": ({}, PAIR_IN, dict(reduction=REDUCTIONS), []),
    "SmoothL1Loss": ({}, PAIR_IN, dict(reduction=REDUCTIONS, beta=[0.5, 0.0]),
                     [dict(beta=0.5, reduction="sum")]),
    "HuberLoss": ({}, PAIR_IN, dict(reduction=REDUCTIONS, delta=[0.5]),
                  [dict(delta=0.5, reduction="none")]),
    "BCELoss": ({}, PROB_IN, dict(reduction=REDUCTIONS, weight=[W5]),
                [dict(weight=W5, reduction="none")]),
    "BCEWithLogitsLoss": ({}, PAIR_IN, dict(reduction=REDUCTIONS, weight=[W5], pos_weight=[W5]),
                          [dict(weight=W5, pos_weight=W5, reduction="sum")]),
    "KLDivLoss": ({}, PROB_IN, dict(reduction=["batchmean", "sum", "none", "foo"],
                                    log_target=[True]),
                  [dict(reduction="batchmean", log_target=True)]),
    "CrossEntropyLoss": ({}, _one(f(4, 5), i([0, 1, 4, 1]), unbatched=[f(5), i(3)],
                              probs=[f(4, 5), c(4, 5, low=0.0)], spatial=[f(3, 5, 2), i(
                                  [[0, 1], [1, 1], [4, 2]])]),
                         dict(weight=[W5], ignore_index=[1, -1], reduction=REDUCTIONS,
                              label_smoothing=[0.1, 1.5]),
                         [dict(weight=W5, ignore_index=1, label_smoothing=0.2),
                          dict(weight=W5, reduction="sum", label_smoothing=0.1),
                          dict(ignore_index=1, reduction="none")]),
    "NLLLoss": ({}, _one(f(4, 5), i([0, 1, 4, 1]), unbatched=[f(5), i(3)],
                     spatial=[f(3, 5, 2), i([[0, 1], [1, 1], [4, 2]])]),
                dict(weight=[W5], ignore_index=[1], reduction=REDUCTIONS),
                [dict(weight=W5, ignore_index=1), dict(weight=W5, reduction="none")]),
    "CosineEmbeddingLoss": ({}, _one(f(4, 5), f(4, 5), k(SIGN), unbatched=[f(5), f(5), k(-1.0)]),
                            dict(margin=[0.5, -0.2], reduction=REDUCTIONS), []),
    "MarginRankingLoss": ({}, _one(f(4), f(4), k(SIGN)), dict(margin=[0.5],
                                                              reduction=REDUCTIONS), []),
    "TripletMarginLoss": ({}, _one(f(4, 5), f(4, 5), f(4, 5), unbatched=[f(5), f(5), f(5)]),
                          dict(margin=[0.5], p=[1.0], eps=[0.1], swap=[True],
                               reduction=REDUCTIONS), [dict(swap=True, p=1.0, margin=2.0)]),
    "GaussianNLLLoss": ({}, _one(f(4, 5), c(4, 5), f(4, 5, low=0.1),
                             unbatched=[f(5), c(5), f(5, low=0.1)],
                             shared_var=[f(4, 5), c(4, 5), f(4, 1, low=0.1)]),
                        dict(full=[True], eps=[0.5], reduction=REDUCTIONS),
                        [dict(full=True, reduction="sum")]),
    "PoissonNLLLoss": ({}, _one(f(4, 5, low=0.1), COUNTS,
                                unbatched=[f(5, low=0.1), k([0, 3, 1, 7, 2])]),
                       dict(log_input=[False], full=[True], eps=[0.5], reduction=REDUCTIONS),
                       [dict(log_input=False, full=True, eps=0.2)]),
    "MultiMarginLoss": ({}, _one(f(4, 5), i([0, 1, 4, 1]), unbatched=[f(5), i(3)]),
                        dict(p=[2, 3], margin=[0.5], weight=[W5], reduction=REDUCTIONS),
                        [dict(p=2, weight=W5, margin=2.0)]),
    "MultiLabelMarginLoss": ({}, _one(f(3, 5), i([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0],
                                                  [-1, 0, 0, 0, 0]]),
                                      unbatched=[f(5), i([2, 4, -1, 0, 0])]),
                             dict(reduction=REDUCTIONS), []),
    "HingeEmbeddingLoss": ({}, _one(f(4), k(SIGN), matrix=[f(2, 2), k([[1, -1], [-1, 1]])]),
                           dict(margin=[0.5, -0.2], reduction=REDUCTIONS), []),
    "SoftMarginLoss": ({}, _one(f(4), k(SIGN), matrix=[f(2, 2), k([[1, -1], [-1, 1]])]),
                       dict(reduction=REDUCTIONS), []),
    # recurrent
    "RNN": ({"input_size": 4, "hidden_size": 5}, _rnn_in,
            {**RNN_VARY, "nonlinearity": ["relu", "foo"]},
            RNN_PAIRS + [dict(nonlinearity="relu", bidirectional=True, num_layers=2)]),
    "LSTM": ({"input_size": 4, "hidden_size": 5}, _rnn_in, RNN_VARY, RNN_PAIRS),
    "GRU": ({"input_size": 4, "hidden_size": 5}, _rnn_in, RNN_VARY, RNN_PAIRS),
    "RNNBase": ({"mode": "LSTM", "input_size": 4, "hidden_size": 5}, _rnn_in,
                {**RNN_VARY, "mode": ["GRU", "RNN_TANH", "foo"]}, []),
    "RNNCellBase": ({"input_size": 4, "hidden_size": 5, "bias": True, "num_chunks": 4},
                    lambda kw: _rnn_in(kw, True),
                    dict(bias=[False], num_chunks=[1], hidden_size=[0]), []),
    "RNNCell": ({"input_size": 4, "hidden_size": 5}, lambda kw: _rnn_in(kw, True),
                dict(bias=[False], nonlinearity=["relu", "foo"]), []),
    "LSTMCell": ({"input_size": 4, "hidden_size": 5}, lambda kw: _rnn_in(kw, True),
                 dict(bias=[False]), []),
    "GRUCell": ({"input_size": 4, "hidden_size": 5}, lambda kw: _rnn_in(kw, True),
                dict(bias=[False]), []),
    # attention
    "MultiheadAttention": ({"embed_dim": 8, "num_heads": 2}, _mha_in,
                           dict(dropout=[0.2], bias=[False], add_bias_kv=[True],
                                add_zero_attn=[True], kdim=[6], vdim=[3], batch_first=[True],
                                num_heads=[3]),
                           [dict(kdim=6, vdim=3, batch_first=True),
                            dict(add_bias_kv=True, add_zero_attn=True, bias=False),
                            dict(kdim=6, add_bias_kv=True)]),
    "TransformerEncoderLayer": ({"d_model": 8, "nhead": 2, "dim_feedforward": 16,
                                 "dropout": 0.0}, lambda kw: _seq_in(kw, 5),
                                LAYER_VARY, LAYER_PAIRS),
    "TransformerDecoderLayer": ({"d_model": 8, "nhead": 2, "dim_feedforward": 16,
                                 "dropout": 0.0}, lambda kw: _seq_in(kw, 4, 5),
                                LAYER_VARY, LAYER_PAIRS),
    "TransformerEncoder": ({"encoder_layer": Lib(ENC), "num_layers": 2},
                           lambda kw: _seq_in(kw, 5),
                           dict(norm=[Lib("LayerNorm(8)")], enable_nested_tensor=[False],
                                mask_check=[False], num_layers=[1]), []),
    "TransformerDecoder": ({"decoder_layer": Lib(DEC), "num_layers": 2},
                           lambda kw: _seq_in(kw, 4, 5),
                           dict(norm=[Lib("LayerNorm(8)")], num_layers=[1]), []),
    "Transformer": ({"d_model": 8, "nhead": 2, "num_encoder_layers": 1, "num_decoder_layers": 1,
                     "dim_feedforward": 16, "dropout": 0.0}, lambda kw: _seq_in(kw, 5, 4),
                    {**LAYER_VARY, "custom_encoder": [Lib(f"TransformerEncoder({ENC}, 1)")],
                     "custom_decoder": [Lib(f"TransformerDecoder({DEC}, 1)")],
                     "num_encoder_layers": [2]}, [dict(norm_first=True, batch_first=True)]),
    # containers
    "Module": ({}, None, {}, []),
    "Sequential": ({}, lambda kw: {"batched": [f(2, 3)]}, {}, []),
    "ModuleList": ({}, None, dict(modules=[Lib("[Linear(3, 4), ReLU()]")]), []),
    "ModuleDict": ({}, None, dict(modules=[Lib("{'a': Linear(3, 4), 'b': ReLU()}")]), []),
    "ParameterList": ({}, None, dict(values=[Lib("[Parameter(ones(2)), Parameter(ones(3))]")]),
                      []),
    "ParameterDict": ({}, None, dict(parameters=[Lib("{'a': Parameter(ones(2))}")]), []),
    "DataParallel": ({"module": Lib("Linear(3, 4)")}, lambda kw: {"batched": [f(2, 3)]},
                     dict(device_ids=[[]], output_device=["cpu"], dim=[1]), []),
}
# positional arguments (*args) of the classes that take them
ARGS = {"Sequential": "Linear(3, 4), ReLU(), Linear(4, 2)"}

# random in train mode, checked by _dropout_check with alpha dropout's affine map
ALPHA = ("AlphaDropout", "FeatureAlphaDropout")
# lazy modules: torch's is initialised by a first call, ours by loading torch's state dict
LAZY = ("LazyLinear",)
# keywords torch's signature takes that no configuration varies, with the reason
NOT_VARIED = {
    ("Upsample", "mode"): "interpolation modes are another test's matrix",
    ("Upsample", "align_corners"): "interpolation modes are another test's matrix",
    "size_average": "deprecated: test_nn_layers_torch.py compares every loss's against torch",
    "reduce": "deprecated: test_nn_layers_torch.py compares every loss's against torch",
}
# what dualgrad refuses on purpose: (class, keyword) -> (exception, message pattern)
REFUSED = {
    ("Embedding", "sparse"): (NotImplementedError, "sparse"),
    ("EmbeddingBag", "sparse"): (NotImplementedError, "sparse"),
    ("LSTM", "proj_size"): (NotImplementedError, "proj_size"),
    ("RNNBase", "proj_size"): (NotImplementedError, "proj_size"),
    ("MultiheadAttention", "add_bias_kv"): (NotImplementedError, "add_bias_kv"),
    ("MultiheadAttention", "add_zero_attn"): (NotImplementedError, "add_zero_attn"),
    ("MultiheadAttention", "kdim"): (NotImplementedError, "kdim"),
    ("MultiheadAttention", "vdim"): (NotImplementedError, "vdim"),
}
# differences not fixed: case id -> reason (the case must still fail)
KNOWN = {
    "EmbeddingBag(scale_grad_by_freq=True)": "torch's CPU embedding_bag divides the k-th "
    "distinct index's gradient by the k-th smallest index's count; dualgrad divides each row's "
    "by its own count, as F.embedding (test_nn_layers_torch.py)",
    **{case: "ParameterList / ParameterDict print no entries (torch prints each parameter's "
       "dtype and size, in two formats of its own)" for case in (
           "ParameterList(values=[Parameter(ones(2)), Parameter(ones(3))])",
           "ParameterDict(parameters={'a': Parameter(ones(2))})")},
}

FLOAT_TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-7, atol=1e-9)}


def _signature(name):
    cls = getattr(torch.nn, name)
    if name in ("RNN", "LSTM", "GRU"):
        params = dict(inspect.signature(torch.nn.RNNBase.__init__).parameters)
        params.pop("mode"), params.pop("self")
        if name == "RNN":
            params["nonlinearity"] = inspect.Parameter("nonlinearity", 1, default="tanh")
        return params
    return {n: p for n, p in inspect.signature(cls.__init__).parameters.items()
            if n != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


def _configs(name):
    base, _, vary, pairs = SPECS[name]
    out = [dict(base)]
    for key, values in vary.items():
        out += [{**base, key: v} for v in values]
    out += [{**base, **p} for p in pairs]
    params = _signature(name)
    if "dtype" in params:
        out.append({**base, "dtype": Lib("float64")})
    if "device" in params:
        out.append({**base, "device": "cpu"})
    return out


def _case_id(name, kw, base):
    diff = {k: v for k, v in kw.items() if k not in base or base[k] is not v}
    return name + "(" + ", ".join(f"{k}={v!r}" for k, v in diff.items()) + ")"


CASES = [(name, kw) for name in SPECS for kw in _configs(name)]
IDS = [_case_id(name, kw, SPECS[name][0]) for name, kw in CASES]


# -- running one configuration in both libraries --------------------------------------------


def _build(lib, name, kw):
    args = Lib(f"({ARGS[name]},)").build(lib) if name in ARGS else ()
    built = {k: (v.build(lib) if isinstance(v, Lib) else v) for k, v in kw.items()}
    return getattr(lib.nn, name)(*args, **built)


def _try(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(), None
        except Exception as e:     # noqa: BLE001 - compared with torch's below
            return None, e


def _same_error(ours, theirs, what):
    if theirs is None and ours is None:
        return False
    assert theirs is not None, f"{what}: torch succeeds, dualgrad raised {ours!r}"
    assert ours is not None, f"{what}: torch raises {theirs!r}, dualgrad does not"
    assert isinstance(ours, type(theirs)), \
        f"{what}: dualgrad raised {type(ours).__name__}({ours}), torch {theirs!r}"
    return True


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _dt(t):
    return str(t.dtype).replace("torch.", "")


def _lazy(t):
    return type(t).__name__ == "UninitializedParameter"


def _state(module):
    return {k: ("uninitialized" if _lazy(v) else tuple(v.shape), _dt(v))
            for k, v in module.state_dict().items()}


def _make_inputs(items, dtype, seed):
    rng = np.random.default_rng(seed)
    out = []
    for item in items:
        if item[0] in ("i", "k"):
            out.append((item[0], item[1] if item[0] == "i" else item[1].astype(dtype)))
            continue
        kind, shape, low = item
        x = rng.standard_normal(shape) if low is None else rng.uniform(low, 1.0, shape)
        if kind == "c" and low is not None:     # probabilities: rows sum to one
            x = x / x.sum(-1, keepdims=True) if x.ndim else x
        out.append((kind, x.astype(dtype)))
    return out


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [y for o in out for y in _flat(o)]
    return [out]


def _run(lib, module, inputs):
    leaves = [lib.tensor(x, requires_grad=True) if kind == "f" else lib.tensor(x)
              for kind, x in inputs]
    # NOTE: a clone, so that in-place modules write an intermediate, as after a layer
    args = [t.clone() if kind == "f" else t for (kind, _), t in zip(inputs, leaves)]
    out = module(*args)
    flat = _flat(out)
    return out, flat, [t for (kind, _), t in zip(inputs, leaves) if kind == "f"]


def _backward(lib, flat, seed):
    rng = np.random.default_rng(seed)
    total = None
    for y in flat:
        if y is None or not _dt(y).startswith("float") or not y.requires_grad:
            continue
        w = lib.tensor(rng.standard_normal(tuple(y.shape)).astype(_dt(y)))
        term = (y * w).sum()
        total = term if total is None else total + term
    if total is not None:
        total.backward()
    return total is not None


def _close(a, b, dtype, what):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != torch's {b.shape}"
    assert str(a.dtype) == str(b.dtype), f"{what}: dtype {a.dtype} != torch's {b.dtype}"
    if a.dtype.kind in "fc":
        np.testing.assert_allclose(a, b, err_msg=what, **FLOAT_TOL[dtype])
    else:
        np.testing.assert_array_equal(a, b, err_msg=what)


def _compare_outputs(flat, tflat, dtype, what):
    assert len(flat) == len(tflat), f"{what}: {len(flat)} outputs != torch's {len(tflat)}"
    for j, (y, ty) in enumerate(zip(flat, tflat)):
        assert (y is None) == (ty is None), f"{what}[{j}]: {y!r} vs torch's {ty!r}"
        if ty is not None:
            _close(y, ty, dtype, f"{what}[{j}]")


SELU_ALPHA = 1.7580993408473766     # SELU's scale * alpha, where alpha dropout saturates


def _dropout_check(name, p, x, y, grad, w):
    """One library's dropout output: zeros or x / (1 - p) (alpha dropout: a * x + c or the
    saturation value, a and c restoring mean and variance), whole channels for the channel
    dropouts, the dropped fraction near p, and the gradient w * mask * scale."""
    x, y, grad, w = _np(x), _np(y), _np(grad), _np(w)
    assert y.shape == x.shape and y.dtype == x.dtype
    if p == 1.0:
        assert not y.any() and not grad.any()
        return
    scale, shift = 1 / (1 - p), 0.0
    if name in ALPHA:
        scale = 1 / math.sqrt((SELU_ALPHA ** 2 * p + 1) * (1 - p))
        shift = SELU_ALPHA * scale * p
        keep = ~np.isclose(y, SELU_ALPHA * scale * (p - 1), rtol=1e-5, atol=1e-6)
    else:
        keep = y != 0
    np.testing.assert_allclose(y[keep], x[keep] * scale + shift, rtol=1e-5, atol=1e-6)
    # NOTE: Dropout2d of a 3-d input is torch's channel dropout of (N, C, L), with a warning
    trailing = {"Dropout1d": 1, "Dropout2d": 2 if x.ndim == 4 else 1, "Dropout3d": 3,
                "FeatureAlphaDropout": x.ndim - 2}.get(name, 0)
    if trailing and x.ndim > trailing:
        grouped = keep.reshape(keep.shape[:keep.ndim - trailing] + (-1,))
        assert (grouped.all(-1) | ~grouped.any(-1)).all(), "channels dropped in part"
        keep_frac = grouped.all(-1).mean()
    else:
        keep_frac = keep.mean()
    assert abs((1 - keep_frac) - p) < 0.12, f"zeroed fraction {1 - keep_frac} for p={p}"
    np.testing.assert_allclose(grad, w * keep * scale, rtol=1e-5)


def _random_train(name, kw, training):
    dropout = name.startswith("Dropout") or name in ALPHA
    return training and (dropout and kw.get("p", 0.5) > 0 or kw.get("dropout", 0) > 0)


def _check_form(name, kw, form, items, dtype, training, seed):
    what = f"{form} {dtype} {'train' if training else 'eval'}"
    ref_state = None
    pair = []
    for lib in (torch, eager):
        torch.manual_seed(0)
        eager.manual_seed(0)
        m = _build(lib, name, kw)
        if lib is torch and name in LAZY:   # NOTE: ours is initialised by loading torch's
            with torch.no_grad():
                m(torch.zeros(items[0][1], dtype=m.weight.dtype))
        if lib is torch:
            ref_state = {k: v.detach().clone() for k, v in m.state_dict().items()}
        else:
            m.load_state_dict({k: eager.tensor(v.numpy()) for k, v in ref_state.items()})
        m.to(getattr(lib, dtype))
        m.train(training)
        pair.append(m)
    ref, ours = pair
    inputs = _make_inputs(items, dtype, seed)
    tres, terr = _try(lambda: _run(torch, ref, inputs))
    res, err = _try(lambda: _run(eager, ours, inputs))
    if _same_error(err, terr, f"{what} forward"):
        return
    (_, flat, leaves), (_, tflat, tleaves) = res, tres
    if _random_train(name, kw, training):
        assert [tuple(y.shape) for y in flat if y is not None] == \
            [tuple(y.shape) for y in tflat if y is not None], f"{what}: shapes"
        assert [_dt(y) for y in flat if y is not None] == \
            [_dt(y) for y in tflat if y is not None], f"{what}: dtypes"
        if name.startswith("Dropout") or name in ALPHA:
            p = kw.get("p", 0.5)
            for lib, y, xs in ((torch, tflat[0], tleaves), (eager, flat[0], leaves)):
                w = np.random.default_rng(seed).standard_normal(tuple(y.shape)).astype(dtype)
                (y * lib.tensor(w)).sum().backward()
                _dropout_check(name, p, _np(lib.tensor(inputs[0][1])), y, xs[0].grad, w)
        return
    _compare_outputs(flat, tflat, dtype, f"{what} output")
    if name in LAZY:
        assert repr(ours) == repr(ref) and type(ours).__name__ == type(ref).__name__, \
            f"{what}: after the first call {ours!r} != torch's {ref!r}"
    ran = _backward(torch, tflat, seed)
    assert _backward(eager, flat, seed) == ran, f"{what}: outputs that require grad"
    if ran:
        for j, (x, tx) in enumerate(zip(leaves, tleaves)):
            assert (x.grad is None) == (tx.grad is None), f"{what}: input {j} grad is None"
            if tx.grad is not None:
                _close(x.grad, tx.grad, dtype, f"{what} input {j} grad")
        tparams = dict(ref.named_parameters())
        params = dict(ours.named_parameters())
        assert list(params) == list(tparams), f"{what}: parameter names"
        for n, tp in tparams.items():
            g, tg = params[n].grad, tp.grad
            assert (g is None) == (tg is None), f"{what}: {n}.grad {g!r} vs torch {tg!r}"
            if tg is not None:
                _close(g, tg, dtype, f"{what} {n}.grad")
    tstate, state = ref.state_dict(), ours.state_dict()
    assert list(state) == list(tstate), f"{what}: state_dict keys after forward"
    for n in tstate:
        _close(state[n], tstate[n], dtype, f"{what} state {n} after forward")


def _check_case(name, kw):
    inputs_fn = SPECS[name][1]
    ref, terr = _try(lambda: _build(torch, name, kw))
    ours, err = _try(lambda: _build(eager, name, kw))
    refused = [REFUSED[(name, key)] for key in kw if (name, key) in REFUSED]
    if refused and terr is None:
        exc, pattern = refused[0]
        assert isinstance(err, exc) and re.search(pattern, str(err)), \
            f"refused keyword: dualgrad gave {err!r}, expected {exc.__name__}({pattern!r})"
        return
    if _same_error(err, terr, "construction"):
        return
    assert _state(ours) == _state(ref), "state_dict keys, shapes or dtypes differ from torch's"
    assert repr(ours) == repr(ref), f"repr {ours!r} != torch's {ref!r}"
    if inputs_fn is None:
        return
    # NOTE: the first input form in both dtypes and modes, the others (unbatched, ...) in
    # float64 train and float32 eval only: half the runs, every dtype and mode still met
    for seed, (form, items) in enumerate(inputs_fn(kw).items()):
        runs = RUNS if seed == 0 else RUNS[1:3]
        for dtype, training in runs:
            _check_form(name, kw, form, items, dtype, training, seed)


RUNS = [("float32", True), ("float64", True), ("float32", False), ("float64", False)]


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_module_configuration_as_torch(name, kw):
    case = _case_id(name, kw, SPECS[name][0])
    if case not in KNOWN:
        _check_case(name, kw)
        return
    with pytest.raises(AssertionError):
        _check_case(name, kw)


def test_every_common_class_has_a_spec():
    ours = {n for n in dir(eager.nn) if isinstance(getattr(eager.nn, n), type)}
    theirs = {n for n in dir(torch.nn) if isinstance(getattr(torch.nn, n), type)
              and issubclass(getattr(torch.nn, n), torch.nn.Module)}
    assert sorted(ours & theirs) == sorted(SPECS)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_keyword_is_varied(name):
    base, _, vary, pairs = SPECS[name]
    covered = set(base) | set(vary) | {k for p in pairs for k in p} | {"device", "dtype"}
    for key, p in _signature(name).items():
        if p.default is inspect.Parameter.empty and key not in vary:
            assert key in base, f"{name}: required {key} missing from the base configuration"
            continue
        assert key in covered or key in NOT_VARIED or (name, key) in NOT_VARIED, \
            f"{name}({key}=...) is varied by no configuration"


POSITIONAL_KNOWN = {}


@pytest.mark.parametrize("name", sorted(n for n in SPECS if SPECS[n][0]))
def test_base_configuration_positionally(name):
    """The base configuration passed positionally, in torch's order, builds the same module."""
    if name not in POSITIONAL_KNOWN:
        _check_positionally(name)
        return
    with pytest.raises(AssertionError):
        _check_positionally(name)


def _check_positionally(name):
    base = SPECS[name][0]
    order = list(_signature(name))
    if not all(k in order for k in base):
        return
    last = max(order.index(k) for k in base)
    params = _signature(name)
    if any(params[k].kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD
           for k in order[:last + 1]):
        return
    args = [base.get(k, params[k].default) for k in order[:last + 1]]
    built = []
    for lib in (torch, eager):
        torch.manual_seed(0)
        built.append(getattr(lib.nn, name)(*[a.build(lib) if isinstance(a, Lib) else a
                                              for a in args]))
    assert repr(built[1]) == repr(built[0])
    assert _state(built[1]) == _state(built[0])


def test_known_and_refused_rows_are_cases():
    assert set(KNOWN) <= set(IDS)
    assert all(name in SPECS for name, _ in REFUSED)

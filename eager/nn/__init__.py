"""eager.nn: Modules with auto-registered parameters, as torch.nn.

>>> from dualgrad import eager
>>> from dualgrad.eager import nn
>>> eager.manual_seed(0)
>>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
>>> model(eager.randn(3, 4)).shape
torch.Size([3, 2])
>>> [name for name, _ in model.named_parameters()]
['0.weight', '0.bias', '2.weight', '2.bias']
"""
from __future__ import annotations

from . import functional
from . import module_hooks
from . import functional as F
from .module import (IncompatibleKeys, Module, Parameter, STATE_VERSION,  # noqa: F401
                     UninitializedParameter, _name_layer, _uniform)
from .basic import (BatchNorm1d, BatchNorm2d, Bilinear, DataParallel, Dropout, Embedding,
                    EmbeddingBag, Flatten, GELU, GRUCell, Identity, LayerNorm, LazyLinear,
                    Linear, LogSoftmax, LSTMCell, ModuleList, RMSNorm, RNNCellBase,
                    Sequential, Sigmoid, Softmax, Softmin, Softplus, Tanh, _BatchNorm)
from .containers import ModuleDict, ParameterDict, ParameterList  # noqa: E402
from .rnn import GRU, LSTM, RNN, RNNBase  # noqa: E402
from .attention import MultiheadAttention  # noqa: E402
from .activation import (CELU, ELU, GLU, SELU, Hardsigmoid, Hardswish, Hardtanh,  # noqa: E402
                         Hardshrink, LeakyReLU, LogSigmoid, Mish, PReLU, ReLU, ReLU6, SiLU,
                         Softmax2d, Softshrink, Softsign, Tanhshrink, Threshold)
from .layers import (AlphaDropout, ChannelShuffle, FeatureAlphaDropout,  # noqa: E402
                     LocalResponseNorm, UpsamplingBilinear2d)
from .layers3d import (AdaptiveAvgPool3d, AdaptiveMaxPool3d, AvgPool3d,  # noqa: E402
                       BatchNorm3d, CircularPad3d, ConstantPad3d, Conv3d, ConvTranspose3d,
                       Dropout3d, InstanceNorm3d, MaxPool3d, ReflectionPad3d, ReplicationPad3d,
                       ZeroPad3d)
from .layers import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d,  # noqa: E402
                     AdaptiveMaxPool2d, AvgPool1d, AvgPool2d, ConstantPad1d, ConstantPad2d,
                     Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d, CosineSimilarity,
                     Dropout1d, Dropout2d, GroupNorm, InstanceNorm1d, InstanceNorm2d,
                     MaxPool1d, MaxPool2d, PairwiseDistance, PixelShuffle, PixelUnshuffle,
                     RNNCell, Fold, Unfold, LPPool1d, LPPool2d, Unflatten, Upsample,
                     UpsamplingNearest2d, ZeroPad1d, ZeroPad2d,
                     ReflectionPad1d, ReflectionPad2d, ReplicationPad1d, ReplicationPad2d,
                     CircularPad1d, CircularPad2d)
from .loss import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss,  # noqa: E402
                   CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MarginRankingLoss, MSELoss,
                   NLLLoss, SmoothL1Loss, TripletMarginLoss, GaussianNLLLoss,
                   HingeEmbeddingLoss, MultiLabelMarginLoss, MultiMarginLoss, PoissonNLLLoss,
                   SoftMarginLoss)
from .transformer import (Transformer, TransformerDecoder,  # noqa: E402
                          TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer)
from . import init, utils  # noqa: E402
from .basic import _DropoutNd, _NormBase  # noqa: E402
from .layers import (_AdaptiveAvgPoolNd, _AdaptiveMaxPoolNd, _AvgPoolNd,  # noqa: E402
                     _CircularPadNd, _ConstantPadNd, _ConvNd, _ConvTransposeNd, _InstanceNorm,
                     _LPPoolNd, _MaxPoolNd, _ReflectionPadNd, _ReplicationPadNd)
from .loss import _Loss, _WeightedLoss  # noqa: E402
from types import SimpleNamespace as _NS  # noqa: E402

# NOTE: torch.nn.modules.<file>.<Class>: the paths type hints, isinstance checks and old
# checkpoints spell out; the files are torch's, each holding the classes dualgrad has
_TORCH_FILES = {
    "module": "Module", "linear": "Identity Linear Bilinear LazyLinear",
    "dropout": "_DropoutNd Dropout Dropout1d Dropout2d Dropout3d AlphaDropout FeatureAlphaDropout",
    "sparse": "Embedding EmbeddingBag", "container": "Sequential ModuleList ModuleDict "
    "ParameterList ParameterDict",
    "normalization": "LayerNorm GroupNorm RMSNorm LocalResponseNorm",
    "batchnorm": "_NormBase _BatchNorm BatchNorm1d BatchNorm2d BatchNorm3d",
    "instancenorm": "_InstanceNorm InstanceNorm1d "
    "InstanceNorm2d InstanceNorm3d",
    "rnn": "RNNBase RNN LSTM GRU RNNCellBase RNNCell LSTMCell GRUCell",
    "conv": "_ConvNd _ConvTransposeNd Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d",
    "pooling": "_MaxPoolNd _AvgPoolNd _AdaptiveMaxPoolNd _AdaptiveAvgPoolNd _LPPoolNd MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d AdaptiveMaxPool1d "
    "AdaptiveMaxPool2d AdaptiveMaxPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d "
    "LPPool1d LPPool2d",
    "activation": "ReLU Hardtanh ReLU6 Sigmoid Hardsigmoid Tanh SiLU Mish Hardswish ELU CELU "
    "SELU GLU GELU LeakyReLU LogSigmoid Softplus MultiheadAttention PReLU Softsign Tanhshrink "
    "Softmin Softmax LogSoftmax Hardshrink Softshrink Threshold Softmax2d",
    "loss": "_Loss _WeightedLoss L1Loss NLLLoss KLDivLoss MSELoss BCELoss BCEWithLogitsLoss SmoothL1Loss HuberLoss "
    "CrossEntropyLoss CosineEmbeddingLoss MarginRankingLoss TripletMarginLoss GaussianNLLLoss "
    "PoissonNLLLoss MultiMarginLoss MultiLabelMarginLoss HingeEmbeddingLoss SoftMarginLoss",
    "distance": "PairwiseDistance CosineSimilarity", "flatten": "Flatten Unflatten",
    "fold": "Fold Unfold",
    "padding": "_ConstantPadNd _ReflectionPadNd _ReplicationPadNd _CircularPadNd CircularPad1d CircularPad2d ConstantPad1d ConstantPad2d ReflectionPad1d "
    "ReflectionPad2d ReplicationPad1d ReplicationPad2d ZeroPad1d ZeroPad2d CircularPad3d "
    "ConstantPad3d ReflectionPad3d ReplicationPad3d ZeroPad3d",
    "pixelshuffle": "PixelShuffle PixelUnshuffle", "upsampling": "Upsample UpsamplingNearest2d UpsamplingBilinear2d", "channelshuffle": "ChannelShuffle",
    "transformer": "Transformer TransformerEncoder TransformerDecoder TransformerEncoderLayer "
    "TransformerDecoderLayer"}
modules = _NS(**{f: _NS(**{c: globals()[c] for c in names.split() if c in globals()})
                 for f, names in _TORCH_FILES.items()})
from .attention import NonDynamicallyQuantizableLinear  # noqa: E402
modules.linear.NonDynamicallyQuantizableLinear = NonDynamicallyQuantizableLinear

__all__ = [n for n in dir() if not n.startswith("_") and n not in ("annotations", "functools", "math", "np", "OrderedDict", "ops", "ShapeError", "user_frame", "where_str", "Tensor", "module", "basic")]

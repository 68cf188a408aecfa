"""The rows of the TF differential test: every op name `dualgrad.graph` provides, how to call
it, or why it is not compared (an exclusion with its reason, listed in docs/tf1-compat.md).

Names are dualgrad's paths (`nn.relu`); TF's is the same under `tf.compat.v1` unless the
row says otherwise. Names that are the same function under another path (`math.exp` is
`exp`) are found by `aliases()` and compared once, under the row of the first name.
"""
from __future__ import annotations

import numpy as np

from dualgrad import graph as dg

from .tf_oracle import DTYPES, Row

S = (2, 3)
B2 = ((2, 3), (3,))       # a binary op's shapes: the second broadcasts
R3 = ((2, 3, 4),)


def idx(shape, hi, dtype=np.int32):
    return lambda rng: rng.integers(0, hi, shape).astype(dtype)


def fixed(value):
    return lambda rng: np.asarray(value)


def U(name, dom="any", **kw):
    return Row(name, (dom,), (S,), **kw)


def Bn(name, dom2="any", dom1="any", **kw):
    return Row(name, (dom1, dom2), B2, **kw)


def Red(name, tf=None, **kw):
    return [Row(name, ("any",), R3, kw={"axis": 1}, tf=tf),
            Row(name, ("any",), R3, kw={"axis": None, "keepdims": True}, tf=tf)] if not kw else \
        [Row(name, ("any",), R3, kw=kw, tf=tf)]


_SEGMENT = ("unsorted_segment_max", "unsorted_segment_min", "unsorted_segment_prod",
            "unsorted_segment_mean", "unsorted_segment_sqrt_n")


def _where(fn, c, x, y):
    return fn(c, x, y)


ROWS = [
    # -- unary elementwise ----------------------------------------------------------------
    *[U(n) for n in ("abs", "negative", "square", "sign", "tanh", "sigmoid", "erf", "sin",
                     "cos", "floor", "ceil", "round", "exp", "is_nan", "is_inf", "is_finite",
                     "stop_gradient", "identity", "zeros_like", "ones_like", "to_float",
                     "to_double", "to_int32", "to_int64", "logical_not")],
    *[U(n, "pos") for n in ("log", "sqrt", "rsqrt", "log1p", "reciprocal", "digamma", "lgamma")],
    *[U(n) for n in ("expm1", "erfc", "math.bessel_i0", "math.bessel_i0e", "math.bessel_i1",
                     "math.bessel_i1e")],
    U("math.erfinv", "unit"), U("math.ndtri", "prob"), U("math.erfcinv", "prob"),
    Row("matrix_determinant", ("any",), ((2, 3, 3),)),
    *[U("nn." + n) for n in ("relu", "relu6", "elu", "selu", "softplus", "softsign",
                            "sigmoid", "tanh", "leaky_relu", "silu", "swish", "softmax",
                            "log_softmax", "l2_loss", "zero_fraction")],
    U("math.log_sigmoid"),
    U("cast", kw={"dtype": np.float32}), U("cast", kw={"dtype": np.int32}),
    U("cast", kw={"dtype": np.bool_}),
    U("check_numerics", kw={"message": "bad"}),
    U("l2_normalize", kw={"axis": 1}, tf="math.l2_normalize"),
    U("nn.l2_normalize", kw={"axis": 1}),
    # -- binary elementwise ---------------------------------------------------------------
    *[Bn(n) for n in ("add", "subtract", "multiply", "maximum", "minimum",
                      "squared_difference", "equal", "not_equal", "greater", "greater_equal",
                      "less", "less_equal", "logical_and", "logical_or")],
    *[Bn(n, "nz") for n in ("divide", "truediv", "div", "realdiv", "floordiv", "floor_div",
                            "floormod", "mod")],
    Bn("floor_mod", "nz", tf="math.floormod"),
    *[Bn(n, "nz") for n in ("truncatediv", "truncatemod")],
    Bn("div_no_nan"), Bn("logical_xor"),
    Row("div_no_nan", ("any", lambda rng: rng.integers(0, 2, S) * rng.uniform(0.5, 2, S)),
        (S, S)),
    Bn("pow", "small", "pos"),
    Row("where", (lambda rng: rng.random(S) < 0.5, "any", "any"), (S, S, S)),
    Row("where", (lambda rng: rng.random(2) < 0.5, "any", "any"), ((2,), S, S)),
    Row("where", (lambda rng: rng.random((2, 1)) < 0.5, "any", "any"), ((2, 1), S, S)),
    Row("where", (lambda rng: rng.random(S) < 0.5, "any", "any"), (S, S, ())),
    Row("where_v2", (lambda rng: rng.random((2, 1)) < 0.5, "any", "any"), ((2, 1), S, (3,))),
    Row("clip_by_value", ("any", "unit", "unit"), (S, (), ())),
    Row("add_n", ("any", "any", "any"), (S, S, S), call=lambda f, *xs: f(list(xs))),
    Row("matmul", ("any", "any"), ((2, 3), (3, 4))),
    Row("matmul", ("any", "any"), ((3, 2), (3, 4)), kw={"transpose_a": True}),
    # -- reductions -----------------------------------------------------------------------
    *[r for n in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
                  "reduce_logsumexp", "reduce_all", "reduce_any", "count_nonzero",
                  "math.reduce_std", "math.reduce_variance") for r in Red(n)],
    *[Row(n, ("any",), ((2, 0),), kw={"axis": 1}) for n in ("reduce_max", "reduce_min")],
    *[Row(n, ("any",), ((0, 3),), kw={"axis": None}) for n in ("reduce_max", "reduce_min")],
    Row("reduce_min", ("any",), ((0, 3),), kw={"axis": 0, "keepdims": True}),
    *Red("reduce_euclidean_norm", axis=1, tf="math.reduce_euclidean_norm"),
    *Red("argmax", axis=1), *Red("argmin", axis=0),
    Row("norm", ("any",), R3), Row("norm", ("any",), R3, kw={"ord": 1, "axis": 2}),
    Row("cumsum", ("any",), R3, kw={"axis": 1}),
    Row("cumsum", ("any",), R3, kw={"axis": 2, "exclusive": True, "reverse": True}),
    Row("cumprod", ("nz",), R3, kw={"axis": 1}),
    Row("nn.moments", ("any",), R3, kw={"axes": [0, 1]}),
    # -- shapes and indexing --------------------------------------------------------------
    Row("reshape", ("any",), R3, kw={"shape": [4, -1]}),
    Row("transpose", ("any",), R3, kw={"perm": [2, 0, 1]}),
    Row("transpose", ("any",), R3),
    Row("matrix_transpose", ("any",), R3, tf="linalg.matrix_transpose"),
    Row("concat", ("any", "any"), (S, S), call=lambda f, a, b: f([a, b], axis=1)),
    Row("stack", ("any", "any"), (S, S), call=lambda f, a, b: f([a, b], axis=1)),
    Row("unstack", ("any",), R3, kw={"axis": 1}),
    Row("split", ("any",), ((2, 6),), kw={"num_or_size_splits": 3, "axis": 1}),
    Row("split", ("any",), ((2, 6),), kw={"num_or_size_splits": [1, 5], "axis": 1}),
    Row("split", ("any",), ((2, 6),), kw={"num_or_size_splits": [2, -1, 1], "axis": 1}),
    Row("expand_dims", ("any",), (S,), kw={"axis": 1}),
    Row("squeeze", ("any",), ((2, 1, 3),)),
    Row("squeeze", ("any",), ((2, 1, 3),), kw={"axis": [1]}),
    Row("one_hot", (idx((4,), 3),), call=lambda f, i: f(i, 3), dtypes=("int32",)),
    Row("one_hot", (idx((4,), 3, np.int64),), call=lambda f, i: f(i, 3, dtype=np.float64),
        dtypes=("int64",)),
    Row("gather", ("any", idx((5,), 2)), ((2, 3),)),
    Row("gather", ("any", idx((2, 2), 3)), ((2, 3),), kw={"axis": 1}),
    Row("gather_nd", ("any", idx((4, 2), 2)), ((2, 3),)),
    Row("nn.embedding_lookup", ("any", idx((5,), 2)), ((2, 3),)),
    Row("pad", ("any",), (S,), kw={"paddings": [[1, 0], [0, 2]]}),
    Row("pad", ("any",), (S,), kw={"paddings": [[1, 1], [2, 2]], "mode": "REFLECT"}),
    Row("pad", ("any",), (S,), kw={"paddings": [[1, 2], [3, 1]], "mode": "SYMMETRIC"}),
    Row("pad", ("any",), (S,), kw={"paddings": [[0, 0], [3, 0]], "mode": "REFLECT"}),
    Row("tile", ("any",), (S,), kw={"multiples": [2, 1]}),
    Row("reverse", ("any",), (S,), kw={"axis": [1]}),
    Row("broadcast_to", ("any",), ((3,),), kw={"shape": [2, 3]}),
    Row("shape", ("any",), R3), Row("size", ("any",), R3), Row("rank", ("any",), R3),
    Row("slice", ("any",), R3, kw={"begin": [0, 1, 1], "size": [2, -1, 2]}),
    Row("strided_slice", ("any",), R3, kw={"begin": [0, 2, 0], "end": [2, 0, 4],
                                           "strides": [1, -1, 2]}),
    Row("boolean_mask", ("any", lambda rng: rng.random(S) < 0.5), (S,)),
    Row("sort", ("any",), (S,)), Row("sort", ("any",), (S,), kw={"direction": "DESCENDING"}),
    Row("argsort", ("any",), (S,), kw={"stable": True}),
    Row("nn.top_k", ("any",), (S,), kw={"k": 2}),
    Row("nn.in_top_k", ("any", idx((2,), 3)), (S,), call=lambda f, p, t: f(p, t, 2)),
    Row("unique", ("any",), ((8,),)),
    Row("sequence_mask", (fixed([1, 3, 2]),), call=lambda f, n: f(n, 4), dtypes=("int32",)),
    Row("segment_sum", ("any", fixed(np.array([0, 0, 1, 3], np.int32))), ((4, 3),)),
    Row("segment_mean", ("any", fixed(np.array([0, 0, 1, 3], np.int32))), ((4, 3),)),
    Row("unsorted_segment_sum", ("any", fixed(np.array([2, 0, 2, 1], np.int32))), ((4, 3),),
        kw={"num_segments": 3}),
    *[Row(n, ("ties", fixed(np.array([2, 0, 2, -1, 0], np.int32))), ((5, 3),),
          kw={"num_segments": 4}) for n in _SEGMENT],
    *[Row(n, ("any", fixed(np.array([[0, 1], [1, -1]], np.int64))), ((2, 2, 3),),
          kw={"num_segments": 2}) for n in _SEGMENT],
    Row("unsorted_segment_max", ("any", fixed(np.zeros(0, np.int32))), ((0, 2),),
        kw={"num_segments": 2}),
    Row("unsorted_segment_sum", ("any", fixed(np.array([[0, 1], [1, -1]], np.int32))),
        ((2, 2, 3),), kw={"num_segments": 3}),
    # -- scatters into new tensors ------------------------------------------------------------
    Row("scatter_nd", (idx((4, 1), 3), "any"), ((4, 1), (4, 2)),
        call=lambda f, i, u: f(i, u, [3, 2])),
    Row("scatter_nd", (idx((2, 2, 2), 2, np.int64), "any"), ((2, 2, 2), (2, 2, 3)),
        call=lambda f, i, u: f(i, u, [2, 2, 3])),
    Row("scatter_nd", (fixed(np.zeros((0, 1), np.int32)), "any"), ((0, 1), (0, 2)),
        call=lambda f, i, u: f(i, u, [3, 2])),
    *[Row("tensor_scatter_nd_" + n, ("ties", idx((3, 1), 4), "ties"), ((4, 2), (3, 1), (3, 2)))
      for n in ("update", "add", "sub", "max", "min")],
    *[Row("tensor_scatter_nd_" + n, ("any", fixed(np.array([[0, 1], [1, 2], [0, 1]])), "any"),
          ((2, 3), (3, 2), (3,))) for n in ("update", "add", "max")],
    Row("tensor_scatter_nd_add", ("any", fixed(np.zeros((0, 2), np.int32)), "any"),
        ((2, 3), (0, 2), (0,))),
    Row("reverse_sequence", ("any", fixed(np.array([2, 4, 0], np.int32))), ((3, 4, 2),),
        kw={"seq_axis": 1, "batch_axis": 0}),
    Row("reverse_sequence", ("any", fixed(np.array([1, 4, 3], np.int64))), ((4, 2, 3),),
        kw={"seq_axis": 0, "batch_axis": 2}),
    Row("reverse_sequence", ("any", fixed(np.array([2, 1], np.int32))), ((2, 3),),
        kw={"seq_dim": 1}),
    # -- counting -----------------------------------------------------------------------------
    Row("bincount", ("small",), ((2, 3),)),
    Row("bincount", (idx((7,), 5), "any"), ((7,), (7,)), call=lambda f, a, w: f(a, weights=w)),
    Row("bincount", (idx((7,), 5),), ((7,),), kw={"minlength": 8, "dtype": np.int64},
        dtypes=("int32",)),
    Row("bincount", (idx((7,), 5, np.int64),), ((7,),), kw={"maxlength": 3, "dtype": np.float32},
        dtypes=("int32",)),
    Row("bincount", (fixed(np.zeros(0, np.int32)),), ((0,),), dtypes=("int32",)),
    Row("histogram_fixed_width", ("any",), ((4, 5),), call=lambda f, v: f(v, [-2, 3], nbins=5)),
    Row("histogram_fixed_width", ("any",), ((7,),),
        call=lambda f, v: f(v, [0, 2], nbins=3, dtype=np.int64)),
    Row("confusion_matrix", ("small", "small"), ((6,), (6,))),
    Row("confusion_matrix", (idx((6,), 3), idx((6,), 3), "any"), ((6,),),
        call=lambda f, lab, p, w: f(lab, p, num_classes=4, weights=w, dtype=w.dtype)),
    Row("confusion_matrix", (idx((6, 1), 3), idx((6,), 3)), ((6, 1), (6,)),
        call=lambda f, lab, p: f(lab, p, num_classes=3, dtype=np.float32), dtypes=("int32",)),
    Row("einsum", ("any", "any"), ((2, 3), (3, 4)), call=lambda f, a, b: f("ij,jk->ik", a, b)),
    Row("tensordot", ("any", "any"), ((2, 3, 4), (4, 3)), kw={"axes": [[1, 2], [1, 0]]}),
    Row("matrix_band_part", ("any",), ((4, 4),), kw={"num_lower": 1, "num_upper": 0}),
    Row("matrix_diag", ("any",), ((2, 3),)),
    Row("matrix_diag_part", ("any",), ((2, 3, 4),)),
    Row("matrix_diag_part", ("any",), ((4, 3),)),
    Row("trace", ("any",), ((2, 3, 3),)),
    Row("roll", ("any",), ((3, 4),), kw={"shift": [1, -6], "axis": [0, 1]}),
    Row("roll", ("any",), ((5,),), kw={"shift": 7, "axis": 0}),
    Row("roll", ("any",), ((2, 3),), kw={"shift": [1, 1], "axis": [1, 1]}),
    Row("clip_by_norm", ("any",), (S,), kw={"clip_norm": 1.0}),
    Row("global_norm", ("any", "any"), (S, (4,)), call=lambda f, *xs: f(list(xs))),
    Row("fill", (fixed([2, 3]), "any"), ((), ())),
    Row("zeros", (), call=lambda f: f([2, 3]), dtypes=("float32",)),
    Row("ones", (), call=lambda f: f([2, 3], dtype=np.int32), dtypes=("int32",)),
    Row("eye", (), call=lambda f: f(3, 4), dtypes=("float32",)),
    Row("range", ("pos",), ((),), call=lambda f, n: f(n)),
    Row("linspace", ("any", "pos"), ((), ()), call=lambda f, a, b: f(a, a + b, 5)),
    Row("lin_space", ("any", "pos"), ((), ()), call=lambda f, a, b: f(a, a + b, 5)),
    # -- nn ---------------------------------------------------------------------------------
    Row("nn.bias_add", ("any", "any"), ((2, 3), (3,))),
    Row("nn.xw_plus_b", ("any", "any", "any"), ((2, 3), (3, 4), (4,))),
    Row("nn.relu_layer", ("any", "any", "any"), ((2, 3), (3, 4), (4,))),
    Row("nn.conv2d", ("any", "any"), ((2, 5, 5, 3), (3, 3, 3, 4)),
        kw={"strides": [1, 1, 1, 1], "padding": "SAME"}),
    Row("nn.conv2d", ("any", "any"), ((1, 6, 6, 2), (2, 2, 2, 3)),
        kw={"strides": [1, 2, 2, 1], "padding": "VALID"}),
    Row("nn.conv1d", ("any", "any"), ((2, 7, 3), (3, 3, 2)), kw={"stride": 2, "padding": "SAME"}),
    Row("nn.depthwise_conv2d", ("any", "any"), ((1, 5, 5, 2), (3, 3, 2, 2)),
        kw={"strides": [1, 1, 1, 1], "padding": "SAME"}),
    Row("nn.separable_conv2d", ("any", "any", "any"), ((1, 5, 5, 2), (3, 3, 2, 2), (1, 1, 4, 3)),
        kw={"strides": [1, 1, 1, 1], "padding": "VALID"}),
    Row("nn.conv2d_transpose", ("any", "any"), ((1, 3, 3, 2), (3, 3, 4, 2)),
        kw={"output_shape": [1, 6, 6, 4], "strides": [1, 2, 2, 1], "padding": "SAME"}),
    Row("nn.max_pool", ("any",), ((2, 5, 5, 3),),
        kw={"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "SAME"}),
    Row("nn.avg_pool", ("any",), ((2, 5, 5, 3),),
        kw={"ksize": [1, 3, 3, 1], "strides": [1, 2, 2, 1], "padding": "SAME"}),
    Row("nn.max_pool2d", ("any",), ((2, 4, 4, 3),), kw={"ksize": 2, "strides": 2, "padding": "VALID"}),
    Row("nn.avg_pool2d", ("any",), ((2, 4, 4, 3),), kw={"ksize": 2, "strides": 2, "padding": "VALID"}),
    Row("nn.batch_normalization", ("any", "any", "pos", "any", "pos"), (S, (3,)),
        kw={"variance_epsilon": 1e-3}),
    Row("nn.dropout", ("any",), (S,), kw={"keep_prob": 1.0}),
    # NOTE: labels are distributions (TF's documented domain: its gradient is softmax - labels)
    Row("nn.softmax_cross_entropy_with_logits_v2", ("dist", "any"), (S, S),
        call=lambda f, lab, log: f(labels=lab, logits=log)),
    Row("nn.softmax_cross_entropy_with_logits", ("dist", "any"), (S, S),
        call=lambda f, lab, log: f(labels=lab, logits=log)),
    Row("nn.sparse_softmax_cross_entropy_with_logits", (idx((2,), 3), "any"), ((2,), S),
        call=lambda f, lab, log: f(labels=lab, logits=log)),
    Row("nn.sigmoid_cross_entropy_with_logits", ("unit", "any"), (S, S),
        call=lambda f, lab, log: f(labels=lab, logits=log)),
    Row("nn.weighted_cross_entropy_with_logits", ("unit", "any"), (S, S),
        call=lambda f, lab, log: f(labels=lab, logits=log, pos_weight=2.0)),
    # -- losses -----------------------------------------------------------------------------
    *[Row("losses." + n, ("any", "any"), (S, S)) for n in
      ("mean_squared_error", "absolute_difference", "huber_loss", "hinge_loss")],
    Row("losses.log_loss", ("unit", "unit"), (S, S), call=lambda f, a, b: f(a * a, b * b)),
    Row("losses.cosine_distance", ("any", "any"), (S, S), kw={"axis": 1}),
    Row("losses.softmax_cross_entropy", ("dist", "any"), (S, S), kw={"label_smoothing": 0.1}),
    Row("losses.sparse_softmax_cross_entropy", (idx((2,), 3), "any"), ((2,), S)),
    Row("losses.sigmoid_cross_entropy", ("unit", "any"), (S, S)),
    Row("losses.mean_squared_error", ("any", "any", "pos"), (S, S, (2, 1)),
        call=lambda f, a, b, w: f(a, b, weights=w)),
    # -- images -----------------------------------------------------------------------------
    Row("image.resize_bilinear", ("any",), ((1, 3, 4, 2),), kw={"size": [5, 7]}),
    Row("image.resize_bilinear", ("any",), ((1, 3, 4, 2),),
        kw={"size": [5, 7], "align_corners": True}),
    Row("image.resize_bilinear", ("any",), ((1, 3, 4, 2),),
        kw={"size": [2, 7], "half_pixel_centers": True}),
    Row("image.resize_nearest_neighbor", ("any",), ((1, 3, 4, 2),), kw={"size": [5, 7]}),
    Row("image.resize_nearest_neighbor", ("any",), ((1, 3, 4, 2),),
        kw={"size": [5, 3], "half_pixel_centers": True}),
    Row("image.resize_images", ("any",), ((1, 3, 4, 2),), kw={"size": [6, 8]}),
    # NOTE: the adjustments refuse bool as TF does (TF with an AttributeError); float64
    # images are adjusted in float32 (both), compared at float32's tolerance in
    # test_tf1_image_adjust.py, as are full-range integer images
    Row("arg_max", ("any",), (S,), kw={"dimension": 1}, grad=False),
    Row("arg_min", ("any",), (S,), kw={"dimension": 0}, grad=False),
    Row("linalg.inv", ("any",), ((2, 3, 3),)),
    Row("linalg.inv", ("any",), ((3, 3),), kw={"adjoint": True}),
    Row("image.adjust_brightness", ("prob",), ((2, 3, 4, 3),), kw={"delta": 0.3}, dtypes=DTYPES[1:]),
    Row("image.adjust_contrast", ("prob",), ((2, 3, 4, 3),), kw={"contrast_factor": 1.7}, dtypes=DTYPES[1:-1]),
    Row("image.adjust_saturation", ("prob",), ((3, 4, 3),), kw={"saturation_factor": 1.8},
        grad=False, dtypes=DTYPES[1:-1]),
    Row("image.adjust_hue", ("prob",), ((3, 4, 3),), kw={"delta": -0.7}, grad=False,
        dtypes=DTYPES[1:-1]),
    Row("image.resize_image_with_crop_or_pad", ("any",), ((5, 6, 2),),
        kw={"target_height": 3, "target_width": 9}),
    Row("image.resize_image_with_crop_or_pad", ("any",), ((2, 5, 6, 2),),
        kw={"target_height": 8, "target_width": 2}),
    # -- variables ----------------------------------------------------------------------------
    *[Row(n, ("any", fixed(np.array([0, 2, 0], np.int32)), "any"), ((4, 2), (3,), (3, 2)),
          variables=True, grad=False)
      for n in ("scatter_update", "scatter_add", "scatter_sub", "scatter_max", "scatter_min",
                "scatter_mul")],
    Row("scatter_div", ("any", fixed(np.array([0, 2, 0], np.int32)), "nz"), ((4, 2), (3,), (3, 2)),
        variables=True, grad=False),
    Row("assign", ("any", "any"), (S, S), variables=True, grad=False),
    Row("assign_add", ("any", "any"), (S, S), variables=True, grad=False),
    Row("assign_sub", ("any", "any"), (S, S), variables=True, grad=False),
]




# -- which names there are ---------------------------------------------------------------------
SUBMODULES = ("nn", "layers", "losses", "image", "math", "random", "initializers", "linalg",
              "train", "metrics")


def public_names():
    """Every public name of `dualgrad.graph` and its TF-style namespaces: {path: object}."""
    out = {n: getattr(dg, n) for n in dg.__all__ if n not in SUBMODULES}
    for sub in SUBMODULES:
        mod = getattr(dg, sub)
        names = getattr(mod, "__all__", None) or [n for n in vars(mod) if not n.startswith("_")]
        out.update({f"{sub}.{n}": getattr(mod, n) for n in names})
    return out


def is_op(obj):
    """A function that builds nodes: what the differential test covers by name."""
    return callable(obj) and not isinstance(obj, type) and type(obj).__name__ == "function"


ROWS += [
    Row("clip_by_global_norm", ("any", "any"), (S, (4,)), call=lambda f, *xs: f(list(xs), 1.5)),
    Row("placeholder_with_default", ("any",), (S,), call=lambda f, x: f(x * 2, [2, 3]) + x),
    Row("losses.compute_weighted_loss", ("any", "pos"), (S, (2, 1)),
        call=lambda f, x, w: f(x, weights=w)),
    *[Row("train." + n, ("pos",), ((),), call=call, dtypes=("int32", "int64"), grad=False)
      for n, call in (
          ("exponential_decay", lambda f, s: f(0.1, s, 3, 0.5, staircase=True)),
          ("polynomial_decay", lambda f, s: f(0.1, s, 10, 0.01, power=2.0)),
          ("natural_exp_decay", lambda f, s: f(0.1, s, 3, 0.5)),
          ("inverse_time_decay", lambda f, s: f(0.1, s, 3, 0.5)),
          ("cosine_decay", lambda f, s: f(0.1, s, 10, alpha=0.1)),
          ("piecewise_constant", lambda f, s: f(s, [2, 3], [0.1, 0.2, 0.3])))],
    Row("diag", ("any",), ((3,),)), Row("diag", ("any",), (S,)),
    # NOTE: not bool: TF raises AttributeError for it (dualgrad a TypeError)
    Row("image.rgb_to_grayscale", ("any",), ((2, 2, 3),), dtypes=DTYPES[1:]),
    Row("image.rgb_to_grayscale", ("any",), ((1, 2, 2, 3),), dtypes=DTYPES[1:]),
    Row("nn.batch_norm_with_global_normalization", ("any", "any", "pos", "any", "any"),
        (S, (3,)), call=lambda f, *xs: f(*xs, 1e-3, True)),
    Row("nn.batch_norm_with_global_normalization", ("any", "any", "pos", "any", "any"),
        (S, (3,)), call=lambda f, *xs: f(*xs, 1e-3, False)),
]

_GRAPH_API = "graph building, sessions, scopes and collections: no values of their own " \
    "(exercised by every row and by the TF1 programs in test_tf_oracle_models.py)"
_RANDOM = "draws random numbers: TF's generator cannot be reproduced, so only the " \
    "distribution is compared (test_tf_oracle_models.py, initialisers)"
_ASSERT = "returns an op that raises when run: its value is nothing to compare; the " \
    "messages are checked in test_tf1_checks.py"
_NOT_TF = "not a tf.compat.v1 name: dualgrad's own"
_LAYERS = "makes variables: compared with the same weights in test_tf_oracle_models.py"
_FILES = "checkpoint files are dualgrad's own format (docs: Known differences)"
_GRAPHDEF = "TF's GraphDef files, not ops: real TF reads what they write and writes what " \
    "they read in test_graphdef.py"
EXCLUDED = {
    **dict.fromkeys(
        ("add_to_collection", "get_collection", "dimension_value", "control_dependencies",
         "constant", "convert_to_tensor", "get_default_graph", "name_scope", "placeholder",
         "reset_default_graph", "as_dtype", "global_variables", "global_variables_initializer",
         "trainable_variables", "variables_initializer", "local_variables",
         "local_variables_initializer", "group", "no_op", "gradients", "get_default_session",
         "get_variable", "get_variable_scope", "variable_scope", "is_variable_initialized",
         "report_uninitialized_variables", "assert_variables_initialized",
         "initializers.global_variables", "initializers.local_variables",
         "initializers.variables", "losses.add_loss", "losses.get_losses",
         "losses.get_regularization_losses", "losses.get_regularization_loss",
         "losses.get_total_loss", "train.get_or_create_global_step", "train.get_global_step",
         "train.global_step", "all_variables", "tables_initializer",
         "metrics.accuracy", "metrics.mean", "train.MonitoredTrainingSession", "device",
         "disable_eager_execution",
         "disable_v2_behavior", "executing_eagerly", "initialize_all_variables",
         "train.start_queue_runners", "is_tensor"), _GRAPH_API),
    **dict.fromkeys(("metrics.true_positives", "metrics.false_positives",
                     "metrics.true_negatives", "metrics.false_negatives", "metrics.precision",
                     "metrics.recall", "metrics.auc"),
                    "streaming metrics over local variables: the same batches are streamed "
                    "through real TF and dualgrad in test_tf1_metrics_oracle.py"),
    "enable_eager_execution": "graph-only engine: raises NotImplementedError naming "
                              "dualgrad.eager (docs: the census)",
    **dict.fromkeys(("decode_raw", "decode_csv", "parse_example", "parse_single_example",
                     "read_file"), "reads bytes, text, files or serialized tf.Example protos: "
                    "the generator draws numeric arrays only (test_tf1_census_gaps.py reads them)"),
    **dict.fromkeys(("set_random_seed", "random_normal", "random_uniform", "truncated_normal",
                     "get_seed", "random.normal", "random.uniform", "random.truncated_normal",
                     "random.set_random_seed", "random.set_seed", "random.get_seed",
                     "multinomial", "random.categorical", "random.multinomial", "random_crop",
                     "image.random_crop", "image.random_flip_left_right",
                     "image.random_flip_up_down", "image.random_brightness",
                     "image.random_contrast", "image.random_saturation", "image.random_hue",
                     "nn.log_uniform_candidate_sampler",
                     "nn.nce_loss", "nn.sampled_softmax_loss"), _RANDOM),
    **dict.fromkeys(("Assert", "assert_equal", "assert_none_equal", "assert_less",
                     "assert_less_equal", "assert_greater", "assert_greater_equal",
                     "assert_positive", "assert_negative", "assert_non_negative",
                     "assert_non_positive", "print", "Print"), _ASSERT),
    **dict.fromkeys(("build_plan", "node_kernel", "describe", "to_dot", "named", "compute_fans",
                     "dynamic_reshape", "nn.layer_norm", "nn.dense"), _NOT_TF),
    **dict.fromkeys(("load", "restore", "save", "train.latest_checkpoint", "train.init_from_checkpoint",
                     "train.get_checkpoint_state", "train.checkpoint_exists",
                     "train.list_variables", "train.load_variable", "train.load_checkpoint",
                     "train.NewCheckpointReader"), _FILES),
    **dict.fromkeys(("import_graph_def", "make_ndarray", "make_tensor_proto",
                     "train.write_graph", "train.import_meta_graph"), _GRAPHDEF),
    **dict.fromkeys(("he_normal", "he_uniform", "lecun_normal", "lecun_uniform",
                     "initializers.he_normal", "initializers.he_uniform",
                     "initializers.lecun_normal", "initializers.lecun_uniform"),
                    "initialisers (TF2-style names beside tf.initializers): " + _RANDOM),
    "nn.static_bidirectional_rnn": "makes variables, and TF 2.21's v1 RNN cells do not run "
                                   "under Keras 3: checked against a NumPy reference in "
                                   "test_tf1_contrib_rnn_wrappers.py",
    **dict.fromkeys(("nn.static_rnn", "nn.dynamic_rnn", "nn.bidirectional_dynamic_rnn",
                     "layers.dense", "layers.dropout", "layers.flatten", "layers.conv2d",
                     "layers.conv2d_transpose", "layers.max_pooling2d",
                     "layers.average_pooling2d", "layers.batch_normalization"), _LAYERS),
    **dict.fromkeys(("train.add_queue_runner", "train.batch", "train.batch_join",
                     "train.input_producer", "train.limit_epochs", "train.range_input_producer",
                     "train.shuffle_batch", "train.shuffle_batch_join",
                     "train.slice_input_producer", "train.string_input_producer",
                     "count_up_to"),
                    "queue-based input pipeline: its values come from queue runners' threads "
                    "(test_tf1_queues.py runs the same pipelines in tf.compat.v1 and compares "
                    "them)"),
    **dict.fromkeys(("random_shuffle", "random.shuffle"),
                    "draws random numbers: TF's generator cannot be reproduced, so "
                    "test_tf1_queues.py compares shuffled pipelines as multisets"),
    "nn.gelu": "not in tf.compat.v1 (TF2 added tf.nn.gelu)",
    "cond": "control flow: compared with its gradients in test_tf_oracle_models.py",
    "case": "control flow: compared with its gradients in test_tf_oracle_models.py",
    "while_loop": "control flow: compared with its gradients in test_tf_oracle_models.py",
    "map_fn": "control flow: compared with its gradients in test_tf_oracle_models.py",
}


# -- cases that still differ from TF: (dtypes or "*", why), by row id (`name` or `name[k]`) ----
_INTS = ("uint8", "int8", "int16", "int32", "int64")
_FLOATS = ("float16", "float32", "float64")
_F32_INSIDE = "TF's kernel computes in float32 for float64 inputs; dualgrad in float64 (a 1e-7 " \
    "relative difference)"
KNOWN = {
    "losses.log_loss": (("bool",) + _INTS + ("float64",), "TF's graph optimiser (grappler) "
                        "rewrites (1 - p) + eps as (1 + eps) - p in float32, so log(1 - p + eps) "
                        "at p = 1 is log(1.19e-7), not log(1e-7): dualgrad's optimised graph "
                        "agrees with TF, the unoptimised one computes the expression as written; "
                        "the float64 gradient differs by about 1e-8 relative (cause not found)"),
    "image.resize_bilinear": (("float64",), _F32_INSIDE + " (the gradient)"),
    "image.resize_bilinear[1]": (("float64",), _F32_INSIDE + " (the gradient)"),
    "image.resize_bilinear[2]": (("float64",), _F32_INSIDE + " (the gradient)"),
    "image.resize_images": (("float64",), _F32_INSIDE + " (the gradient)"),
}

# aliases whose tf.compat.v1 path does not exist
NO_TF_ALIAS = {
    "nn.deconv2d": "TF 0.x's name for conv2d_transpose, gone from tf.compat.v1 (compared as "
                   "nn.conv2d_transpose)",
    "concat_v2": "TF 0.12-1.0's name for concat, gone from tf.compat.v1 (compared as concat)",
    "math.realdiv": "dualgrad also has it under math; tf.compat.v1 only at the top level "
                    "(tf.realdiv, compared by its row)",
}

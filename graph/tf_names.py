"""TF's default node names: what tf.compat.v1 calls the node a function or operator builds
when no `name=` is given. One table for the graph functions (`DEFAULT_NAMES`, by their
path under `graph`), one for the Tensor operators (`OPERATOR_NAMES`).

TF names a node after its kernel when the function is one op ('MatMul', 'Softmax', 'Sum'),
and after the Python function when it is a composition or a Python-level wrapper ('truediv',
'l2_normalize', 'logistic_loss'); dualgrad builds every function's nodes under a name scope
of that name and gives the result the name itself (core.scoped_call), so `x @ w` is 'matmul',
`graph.matmul(x, w)` 'MatMul', and a later `graph.matmul` 'MatMul_1', as in TF. A function
not listed takes its own Python name. tests/graph/test_tf1_default_names.py builds each
listed function in both and compares.

>>> from dualgrad import graph
>>> g = graph.Graph()
>>> with g.as_default():
...     x = graph.placeholder(graph.float32, (None, 3), name="x")
...     print(graph.nn.softmax(x).name, graph.reduce_mean(x).name, (x / 2.0).name)
Softmax:0 Mean:0 truediv:0
"""

# NOTE: TF's Python operators name their node in lower case ('add', 'mul') where the
# function of the same op does not ('Add', 'Mul'); comparisons and unary ops take the kernel's
OPERATOR_NAMES = {
    "__add__": "add", "__radd__": "add", "__sub__": "sub", "__rsub__": "sub",
    "__mul__": "mul", "__rmul__": "mul", "__truediv__": "truediv", "__rtruediv__": "truediv",
    "__floordiv__": "floordiv", "__rfloordiv__": "floordiv", "__mod__": "mod",
    "__rmod__": "mod", "__pow__": "pow", "__rpow__": "pow", "__matmul__": "matmul",
    "__rmatmul__": "matmul", "__neg__": "Neg", "__abs__": "Abs", "__lt__": "Less",
    "__le__": "LessEqual", "__gt__": "Greater", "__ge__": "GreaterEqual",
    "__invert__": "LogicalNot", "__and__": "and", "__or__": "or",
    "__getitem__": "strided_slice",
}

DEFAULT_NAMES = {
    # elementwise arithmetic
    "add": "Add", "subtract": "Sub", "multiply": "Mul", "truediv": "truediv",
    "div": "div", "realdiv": "RealDiv", "floordiv": "floordiv", "floor_div": "FloorDiv",
    "floormod": "FloorMod", "mod": "FloorMod", "pow": "Pow", "negative": "Neg", "abs": "Abs",
    "maximum": "Maximum", "minimum": "Minimum", "squared_difference": "SquaredDifference",
    "square": "Square", "sqrt": "Sqrt", "rsqrt": "Rsqrt", "exp": "Exp", "log": "Log",
    "log1p": "Log1p", "reciprocal": "Reciprocal", "sign": "Sign", "floor": "Floor",
    "ceil": "Ceil", "round": "Round", "sin": "Sin", "cos": "Cos", "tanh": "Tanh",
    "sigmoid": "Sigmoid", "erf": "Erf", "div_no_nan": "div_no_nan",
    "truncatediv": "TruncateDiv", "truncatemod": "TruncateMod",
    "is_nan": "IsNan", "is_inf": "IsInf", "is_finite": "IsFinite",
    "clip_by_value": "clip_by_value", "clip_by_norm": "clip_by_norm",
    "cumsum": "Cumsum", "cumprod": "Cumprod", "stop_gradient": "StopGradient",
    # comparisons and logic
    "equal": "Equal", "not_equal": "NotEqual", "greater": "Greater",
    "greater_equal": "GreaterEqual", "less": "Less", "less_equal": "LessEqual",
    "logical_not": "LogicalNot", "logical_and": "LogicalAnd", "logical_or": "LogicalOr",
    "logical_xor": "LogicalXor",
    # reductions
    "reduce_sum": "Sum", "reduce_mean": "Mean", "reduce_max": "Max", "reduce_min": "Min",
    "reduce_prod": "Prod", "reduce_all": "All", "reduce_any": "Any",
    "reduce_logsumexp": "ReduceLogSumExp", "argmax": "ArgMax", "argmin": "ArgMin",
    # shapes and indexing
    "matmul": "MatMul", "reshape": "Reshape", "transpose": "transpose", "concat": "concat",
    "stack": "stack", "expand_dims": "ExpandDims", "squeeze": "Squeeze", "cast": "Cast",
    "one_hot": "one_hot", "gather": "GatherV2", "tile": "Tile", "pad": "Pad",
    "reverse": "ReverseV2", "zeros_like": "zeros_like", "ones_like": "ones_like",
    "broadcast_to": "BroadcastTo", "math_ops._where": "Select",
    "math_ops._select_v2": "SelectV2",
    # nn
    "nn.relu": "Relu", "nn.sigmoid": "Sigmoid", "nn.tanh": "Tanh", "nn.relu6": "Relu6", "nn.elu": "Elu", "nn.selu": "Selu",
    "nn.softplus": "Softplus", "nn.softsign": "Softsign", "nn.leaky_relu": "LeakyRelu",
    "nn.softmax": "Softmax", "nn.log_softmax": "LogSoftmax", "nn.bias_add": "BiasAdd",
    "nn.l2_loss": "L2Loss", "nn.l2_normalize": "l2_normalize",
    "nn.sigmoid_cross_entropy_with_logits": "logistic_loss",
    # NOTE: these return their scope's last op; of 2-d logits (other ranks reshape after it)
    "nn.softmax_cross_entropy_with_logits": "softmax_cross_entropy_with_logits_sg/Reshape_2",
    "nn.softmax_cross_entropy_with_logits_v2": "softmax_cross_entropy_with_logits/Reshape_2",
    "nn.sparse_softmax_cross_entropy_with_logits":
        "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits",
    "nn.dropout": "dropout/SelectV2", "nn.conv2d": "Conv2D", "nn.max_pool": "MaxPool", "nn.avg_pool": "AvgPool",
}

# The name a node of one dualgrad primitive takes when built outside these functions (a
# gradient rule's nodes, a composite's parts) is the op entry's `tf_name` (ops/core.py).

"""dualgrad's define-and-run engine, in the style of TensorFlow 1.x (`tf.compat.v1`).

Ops build nodes of a `Graph`; nothing runs until `Session.run(fetches, feed_dict)`.
Shape rules run as each node is built, so a mismatch with known dims raises `ShapeError`
at the user's line; errors at run time name the node and the line that built it.

>>> import numpy as np
>>> from dualgrad import graph
>>> x = graph.placeholder(graph.float32, (None, 3), name="x")
>>> w = graph.Variable(np.ones((3, 2), np.float32), name="w")
>>> loss = graph.reduce_mean(graph.matmul(x, w) ** 2)
>>> train_op = graph.train.GradientDescentOptimizer(0.1).minimize(loss)
>>> with graph.Session() as sess:
...     sess.run(graph.global_variables_initializer())
...     before = sess.run(loss, {x: np.ones((4, 3))})
...     _ = sess.run(train_op, {x: np.ones((4, 3))})
...     float(sess.run(loss, {x: np.ones((4, 3))})) < float(before)
True

See docs/graph.md for the guide, graph/plan.py for the execution-plan interface.
"""
if __name__ != "dualgrad.graph":  # NOTE: a second copy would mean a second op registry
    raise ImportError(f"dualgrad's engines import under one root: write `from dualgrad import graph`, "
                      f"not `import {__name__}` (found {__file__})")
from dualgrad.ops import ShapeError

from . import errors
from .core import PublicTensor as Tensor  # noqa: E402 - a Variable is no Tensor, as in TF
from .core import is_tensor
from .core import (Graph, GraphKeys, Node, TensorShape, add_to_collection,
                   control_dependencies, constant, convert_to_tensor, get_collection,
                   get_default_graph, name_scope, placeholder, reset_default_graph)
from .shapes import Dimension, dimension_value
from .dtypes import DType, as_tf_dtype as as_dtype, dtype_of as _dtype_of
from . import dtypes as _dt
bool_, float16, float32, float64, int8, int16, int32, int64, uint8, string = (  # tf.float32, …
    _dtype_of(getattr(_dt, n)) for n in ("bool_", "float16", "float32", "float64", "int8",
                                         "int16", "int32", "int64", "uint8", "string"))
from .variables import (Variable, assign, assign_add, assign_sub, global_variables,
                        global_variables_initializer, local_variables,
                        local_variables_initializer, trainable_variables,
                        variables_initializer, count_up_to, is_variable_initialized,
                        report_uninitialized_variables, assert_variables_initialized)
from .control_flow import case, cond, group, identity, map_fn, no_op, print_, while_loop
from . import while_grad as _while_grad  # noqa: F401 - registers the while_grad graph op
from .gradients import gradients
from .math_ops import *  # noqa: F403 - TF's op functions: graph.matmul, graph.reduce_sum, …
from .math_ops import __all__ as _math_all
from .session import InteractiveSession, Session, get_default_session
from .config import (ConfigProto, GPUOptions, GraphOptions, OptimizerOptions, RunMetadata,
                     RunOptions)
from .plan import Plan, Step, build_plan, node_kernel
from .array_ops import *  # noqa: F403 - shape, size, rank, fill, zeros, ones, range, unstack
from .array_ops import __all__ as _array_all
from .select_ops import (argsort, boolean_mask, einsum, gather_nd, sequence_mask, slice,  # noqa: A004
                         reverse_sequence, segment_mean, segment_sum, sort, strided_slice, tensordot,
                         unique, unsorted_segment_sum)
from .checks import *  # noqa: F403 - Assert, assert_equal, check_numerics, …
from .checks import __all__ as _checks_all
from .scatter_ops import *  # noqa: F403 - scatter_update, scatter_add, …
from .scatter_ops import __all__ as _scatter_all
from .scatter_nd_ops import *  # noqa: F403 - scatter_nd, tensor_scatter_nd_update, …
from .scatter_nd_ops import __all__ as _scatter_nd_all
from .segment_ops import *  # noqa: F403 - unsorted_segment_max, bincount, confusion_matrix, …
from .segment_ops import __all__ as _segment_all
from .init_ops import *  # noqa: F403 - zeros_initializer, glorot_uniform_initializer, …
from .init_ops import __all__ as _init_all
from .variable_scope import (AUTO_REUSE, VariableScope, get_variable, get_variable_scope,
                             variable_scope)
from . import nn, layers, losses, metrics, train, contrib
from . import image, math, random, initializers, linalg  # noqa: A004 - tf.math, tf.random, …
from .linalg import (band_part as matrix_band_part, det as matrix_determinant,
                     diag as matrix_diag, diag_part as matrix_diag_part,
                     inv as matrix_inverse, matrix_transpose, trace)
from . import onnx  # noqa: F401 - graph.onnx.export / load; the onnx package loads lazily
from .serialize import load, restore, save
from .graph_def import (AttrValue, GraphDef, MetaGraphDef, NameAttrList, NodeDef,
                        make_ndarray, make_tensor_proto)
from .graph_def_import import import_graph_def
from .freeze import convert_variables_to_constants as _freeze_to_graph_def
from .inspect import describe, to_dot
from . import keras, summary
from .summary import Summary
from . import data, flags, gfile, io, mnist, tf_logging as logging  # noqa: A004 - tf.logging
from .io import FixedLenFeature, decode_raw, parse_example, parse_single_example
from .platform import (VERSION, device, disable_eager_execution, disable_v2_behavior,
                       enable_eager_execution, executing_eagerly, initialize_all_variables,
                       all_variables)
from types import SimpleNamespace as _NS

__version__ = VERSION
app = _NS(run=flags.run, flags=flags)
python_io = _NS(TFRecordWriter=io.TFRecordWriter, tf_record_iterator=io.tf_record_iterator)
examples = _NS(tutorials=_NS(mnist=_NS(input_data=mnist)))   # tf.examples.tutorials.mnist
from .augment import decode_csv, diag, multinomial, random_crop, read_file
from .queues import FIFOQueue, PaddingFIFOQueue, QueueBase, RandomShuffleQueue
from .readers import (FixedLengthRecordReader, ReaderBase, TextLineReader, TFRecordReader,
                      WholeFileReader)
from .input_pipeline import random_shuffle
queue = _NS(FIFOQueue=FIFOQueue, PaddingFIFOQueue=PaddingFIFOQueue,   # tf.queue (TF 1.14+)
            RandomShuffleQueue=RandomShuffleQueue, QueueBase=QueueBase)
from .shapes import TensorShape as _TensorShape
from . import estimator, feature_column
from . import lookup as _lookup, nest  # noqa: E402 - tf.nest, the vocabulary tables
from .lookup import tables_initializer  # noqa: E402
from . import tensor_util as _tensor_util  # noqa: E402
python = _NS(framework=_NS(tensor_shape=_NS(TensorShape=_TensorShape, Dimension=Dimension,
                                            scalar=lambda: _TensorShape([])),
                           tensor_util=_NS(constant_value=_tensor_util.constant_value),
                           smart_cond=_NS(smart_cond=_tensor_util.smart_cond),
                           ops=_NS(convert_to_tensor=convert_to_tensor, name_scope=name_scope),
                           graph_util=_NS(convert_variables_to_constants=_freeze_to_graph_def,
                                          import_graph_def=import_graph_def)),
              platform=_NS(gfile=gfile),   # tensorflow.python.*: the same objects as tf.*
              layers=_NS(utils=_NS(smart_cond=_tensor_util.smart_cond,
                                   constant_value=_tensor_util.constant_value)),
              ops=_NS(array_ops=_NS(identity=identity, shape=shape),
                      math_ops=_NS(floor=floor), random_ops=_NS(random_uniform=random_uniform),
                      lookup_ops=_lookup,
                      variables=_NS(Variable=Variable)))
graph_util = python.framework.graph_util   # tf.graph_util
concat_v2 = concat   # TF 0.12's name
compat = _NS(as_bytes=lambda s, encoding="utf-8": s.encode(encoding) if isinstance(s, str)
             else bytes(s),
             as_str=lambda s, encoding="utf-8": s.decode(encoding) if isinstance(s, bytes)
             else str(s))
compat.as_text = compat.as_str
compat.v1 = compat.v2 = __import__("sys").modules[__name__]   # tf.compat.v1 is this module
python.util = _NS(compat=compat)

Operation = Node
from .naming import install_default_names as _install_default_names  # noqa: E402
from .tf_names import DEFAULT_NAMES as _DEFAULT_NAMES  # noqa: E402
_install_default_names(__import__("sys").modules[__name__], _DEFAULT_NAMES)
bool = bool_  # noqa: A001 - graph.bool, as tf.bool
print = print_  # noqa: A001 - graph.print(x, message), as tf.print / tf.Print
Print = print_

__all__ = [
    "ShapeError", "set_random_seed", "errors", "Graph", "GraphKeys", "add_to_collection",
    "get_collection", "Node", "Operation", "Tensor", "is_tensor",
    "TensorShape", "Dimension", "dimension_value", "control_dependencies", "constant", "convert_to_tensor",
    "get_default_graph", "name_scope", "placeholder", "reset_default_graph", "as_dtype", "DType",
    "bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
    "Variable", "assign", "assign_add", "assign_sub", "global_variables",
    "global_variables_initializer", "trainable_variables", "variables_initializer", "cond",
    "local_variables", "local_variables_initializer", "is_variable_initialized",
    "report_uninitialized_variables", "assert_variables_initialized",
    "case", "group", "identity", "map_fn", "no_op", "print", "Print", "while_loop", "gradients",
    "InteractiveSession", "Session", "get_default_session", "ConfigProto", "GPUOptions",
    "GraphOptions", "OptimizerOptions", "RunMetadata", "RunOptions", "Plan", "Step", "build_plan",
    "node_kernel", "nn", "layers", "losses", "metrics", "onnx", "train", "load", "restore", "save", "summary",
    "describe", "to_dot", "data", "flags", "gfile", "io", "logging", "string", "app",
    "python_io", "queue", "examples", "FixedLenFeature", "decode_raw", "parse_example",
    "parse_single_example", "VERSION", "device", "disable_eager_execution",
    "disable_v2_behavior", "enable_eager_execution", "executing_eagerly",
    "initialize_all_variables", "all_variables", "decode_csv", "diag", "multinomial", "random_crop",
    "read_file", "FIFOQueue", "PaddingFIFOQueue", "QueueBase", "RandomShuffleQueue", "ReaderBase", "TextLineReader",
    "TFRecordReader", "WholeFileReader", "FixedLengthRecordReader", "random_shuffle", "count_up_to",
    "estimator", "feature_column", "python", "concat_v2", "compat", "nest", "tables_initializer",
    "argsort", "boolean_mask", "einsum", "gather_nd", "sequence_mask", "slice", "sort", "strided_slice",
    "tensordot", "unique", "reverse_sequence", "segment_sum", "segment_mean", "unsorted_segment_sum", "contrib", "image", "math", "random", "initializers", "linalg", "matrix_band_part",
    "matrix_diag", "matrix_diag_part", "trace", "matrix_transpose", "matrix_determinant", "matrix_inverse", "keras", "Summary", "AUTO_REUSE", "VariableScope", "get_variable", "get_variable_scope", "variable_scope",
    "AttrValue", "GraphDef", "MetaGraphDef", "NameAttrList", "NodeDef", "make_ndarray",
    "make_tensor_proto", "import_graph_def", "graph_util",
    *_math_all, *_init_all, *_array_all, *_checks_all, *_scatter_all,
    *_scatter_nd_all, *_segment_all,
]

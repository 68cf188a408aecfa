"""`graph.random`: the `tf.random` namespace of tf.compat.v1 (the same functions as
`graph.random_normal` & co.).

>>> from dualgrad import graph as tf
>>> tf.random.set_random_seed(1)
>>> tf.random.normal([2, 3]).shape
TensorShape([2, 3])
"""
from .math_ops import (get_seed, random_normal as normal, random_uniform as uniform,
                       set_random_seed, truncated_normal)

from .augment import categorical, multinomial
from .input_pipeline import random_shuffle as shuffle

# NOTE: TF2's name for the graph-level seed; under tf.compat.v1 it sets the same seed
set_seed = set_random_seed

__all__ = ["normal", "uniform", "truncated_normal", "set_random_seed", "set_seed", "get_seed",
           "categorical", "multinomial", "shuffle"]

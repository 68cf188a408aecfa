"""`graph.initializers`: the `tf.initializers` namespace of tf.compat.v1: the initialiser
classes of graph/init_ops.py under their short names, and the variable initialiser ops.

>>> from dualgrad import graph as tf
>>> tf.initializers.glorot_uniform is tf.glorot_uniform_initializer
True
"""
from .init_ops import (constant_initializer as constant, glorot_normal_initializer as glorot_normal,
                       glorot_uniform_initializer as glorot_uniform, he_normal, he_uniform,
                       lecun_normal, lecun_uniform, ones_initializer as ones,
                       random_normal_initializer as random_normal,
                       random_uniform_initializer as random_uniform,
                       truncated_normal_initializer as truncated_normal,
                       variance_scaling_initializer as variance_scaling,
                       zeros_initializer as zeros)
from .variables import (global_variables_initializer as global_variables,
                        local_variables_initializer as local_variables,
                        variables_initializer as variables)

__all__ = ["constant", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform",
           "lecun_normal", "lecun_uniform", "ones", "random_normal", "random_uniform",
           "truncated_normal", "variance_scaling", "zeros", "global_variables",
           "local_variables", "variables"]

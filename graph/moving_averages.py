"""`tf.train.ExponentialMovingAverage`: shadow copies of variables that `apply()` moves
towards the variables' values, `shadow -= (1 - decay) * (shadow - value)`, with TF1's
`num_updates` rule (decay = min(decay, (1 + n) / (10 + n))). Shadows are non-trainable
variables named `<var>/ExponentialMovingAverage`, initialised to the variable's initial
value, and `variables_to_restore()` maps those names for a Saver, as TF1.

>>> import numpy as np
>>> from dualgrad import graph as tf
>>> w = tf.Variable(np.float32(1.0), name="w")
>>> ema = tf.train.ExponentialMovingAverage(decay=0.9)
>>> update = ema.apply([w])
>>> with tf.Session() as sess:
...     sess.run(tf.global_variables_initializer())
...     _ = sess.run(tf.assign(w, 3.0))
...     sess.run(update)
...     print(round(float(sess.run(ema.average(w))), 4))
1.2
"""
from __future__ import annotations

import numpy as np

from .control_flow import group
from .core import GraphKeys, Tensor, get_default_graph
from .math_ops import cast, minimum
from .variables import Variable, assign_sub

__all__ = ["ExponentialMovingAverage"]


class ExponentialMovingAverage:
    def __init__(self, decay, num_updates=None, zero_debias=False,
                 name="ExponentialMovingAverage"):
        if zero_debias:
            raise NotImplementedError("ExponentialMovingAverage: zero_debias=True is not "
                                      "supported")
        self._decay, self._num_updates, self.name = decay, num_updates, name
        self._averages = {}

    def _decay_tensor(self, dtype):
        decay = self._decay
        if self._num_updates is not None:
            n = cast(self._num_updates, np.float32)
            decay = minimum(decay, (1.0 + n) / (10.0 + n))
        return cast(decay, dtype) if isinstance(decay, Tensor) else decay

    def apply(self, var_list=None):
        """Create the shadows (once per variable) and return the op that updates them."""
        g = get_default_graph()
        if var_list is None:
            var_list = g.get_collection(GraphKeys.TRAINABLE_VARIABLES)
        updates = []
        for v in var_list:
            if id(v) not in self._averages:
                with g.name_scope(None):
                    self._averages[id(v)] = Variable(v.initial_value if isinstance(
                        v, Variable) else v, trainable=False,
                        name=f"{_op_name(v)}/{self.name}")
            shadow = self._averages[id(v)]
            keep = self._decay_tensor(shadow.dtype)
            updates.append(assign_sub(shadow, (1.0 - keep) * (shadow - v)))
        return group(*updates, name=self.name)

    def average(self, var):
        return self._averages.get(id(var))

    def average_name(self, var):
        return f"{_op_name(var)}/{self.name}"

    def variables_to_restore(self, moving_avg_variables=None):
        """{checkpoint name: variable}: each averaged variable restores from its shadow's
        name, the others from their own (TF1's mapping for evaluation with averages)."""
        g = get_default_graph()
        out = {}
        for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES):
            if any(v is s for s in self._averages.values()):
                continue
            out[self.average_name(v) if id(v) in self._averages else _op_name(v)] = v
        return out


def _op_name(v):
    return v.name.split(":")[0]

"""`graph.train`: optimizers whose updates are graph nodes (assigns built from op calls).

Update rules, as TF1 (and PyTorch, where they agree) write them; g is the gradient:

- GradientDescentOptimizer: var -= lr * g
- MomentumOptimizer: accum = momentum * accum + g; var -= lr * accum
  (use_nesterov: var -= lr * (g + momentum * accum)) — the same as torch.optim.SGD with
  momentum and dampening 0.
- AdamOptimizer (TF1's form): m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
  lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t); var -= lr_t * m / (sqrt(v) + epsilon).
  torch.optim.Adam divides by sqrt(v_hat) + eps instead: the two differ only in where
  epsilon sits (epsilon * sqrt(1 - b2^t) here), which matters only when sqrt(v) ~ eps.

>>> import numpy as np
>>> from dualgrad import graph
>>> w = graph.Variable(np.array([1.0], np.float32))
>>> train = graph.train.GradientDescentOptimizer(0.5).minimize(graph.reduce_sum(w * w))
>>> with graph.Session() as s:
...     s.run(graph.global_variables_initializer()); s.run(train); s.run(w)
array([0.], dtype=float32)
"""
from __future__ import annotations

from types import SimpleNamespace as _NS

import numpy as np

from dualgrad import ops
from dualgrad.ops.updates import (adadelta_update, adagrad_update, adam_update_tf,
                                  ftrl_update_tf, rmsprop_update_tf, sgd_update)

from .control_flow import group
from .core import Tensor
from .gradients import gradients
from .saver import Saver, checkpoint_exists, get_checkpoint_state, latest_checkpoint
from .checkpoint_init import (NewCheckpointReader, init_from_checkpoint, list_variables,
                              load_checkpoint, load_variable)
from .monitored import ChiefSessionCreator, MonitoredSession, MonitoredTrainingSession
from .hooks import (LoggingTensorHook, NanLossDuringTrainingError, NanTensorHook, Scaffold,
                    SessionRunArgs, SessionRunContext, SessionRunHook, SessionRunValues,
                    StopAtStepHook, CheckpointSaverHook, CheckpointSaverListener)
from .lr_decay import (cosine_decay, inverse_time_decay, natural_exp_decay, piecewise_constant,
                       polynomial_decay)
from .variables import Variable, assign, assign_add, get_global_step, get_or_create_global_step
from .coordinator import Coordinator, start_queue_runners
from .input_pipeline import (QueueRunner, add_queue_runner, batch, batch_join, input_producer,
                             limit_epochs, range_input_producer, shuffle_batch,
                             shuffle_batch_join, slice_input_producer, string_input_producer)
from .moving_averages import ExponentialMovingAverage
from .summary import FileWriter as SummaryWriter   # TF 0.x's name of summary.FileWriter
from .io import BytesList, Example, Feature, Features, FloatList, Int64List
from .graph_def_export import write_graph
from .meta_graph import import_meta_graph

queue_runner = _NS(QueueRunner=QueueRunner, add_queue_runner=add_queue_runner,   # its module
                   start_queue_runners=start_queue_runners)

__all__ = ["write_graph", "import_meta_graph", "ExponentialMovingAverage", "SummaryWriter", "Coordinator", "start_queue_runners",
           "QueueRunner", "add_queue_runner", "queue_runner", "batch", "batch_join",
           "input_producer", "limit_epochs", "range_input_producer", "shuffle_batch",
           "shuffle_batch_join", "slice_input_producer", "string_input_producer", "Example",
           "Features", "Feature", "Int64List",
           "FloatList", "BytesList", "Optimizer", "GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer",
           "RMSPropOptimizer", "AdagradOptimizer", "AdadeltaOptimizer", "FtrlOptimizer",
           "exponential_decay",
           "get_or_create_global_step", "get_global_step", "global_step", "Saver", "latest_checkpoint",
           "get_checkpoint_state", "checkpoint_exists", "piecewise_constant", "polynomial_decay",
           "natural_exp_decay", "inverse_time_decay", "cosine_decay", "init_from_checkpoint",
           "list_variables", "load_variable", "load_checkpoint", "NewCheckpointReader",
           "SessionRunHook", "SessionRunArgs",
           "SessionRunContext", "SessionRunValues", "StopAtStepHook", "LoggingTensorHook",
           "NanTensorHook", "NanLossDuringTrainingError", "CheckpointSaverHook",
           "CheckpointSaverListener", "Scaffold", "MonitoredSession", "MonitoredTrainingSession",
           "ChiefSessionCreator"]


def global_step(sess, global_step_tensor):
    """The global step's value as a Python int (TF1's tf.train.global_step)."""
    return int(sess.run(global_step_tensor))


class Optimizer:
    """Base class: `minimize(loss)` = `apply_gradients(compute_gradients(loss))`."""

    def __init__(self, learning_rate, name):
        self.learning_rate = learning_rate
        self.name = name
        self._slots: dict[tuple[str, int], Variable] = {}

    def compute_gradients(self, loss, var_list=None):
        """[(gradient or None, variable)] for the trainable variables (or var_list)."""
        if not isinstance(loss, Tensor):
            raise TypeError(f"{self.name}: loss must be a graph tensor, got {loss!r}")
        var_list = list(var_list) if var_list is not None else loss.graph.trainable_variables()
        if not var_list:
            raise ValueError(f"{self.name}: no variables to optimize")
        return list(zip(gradients(loss, var_list), var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """One node that applies every update (and increments global_step, if given)."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            names = [v.name for _, v in grads_and_vars]
            raise ValueError(f"{self.name}: no gradients provided for any variable "
                             f"({', '.join(names)}): the loss does not depend on them")
        g = pairs[0][1].graph
        with g.as_default(), g.name_scope(name or self.name) as scope:
            self._prepare(pairs)
            updates = [n for grad, var in pairs for n in self._apply_one(grad, var)]
            updates += self._finish(updates)
            if global_step is not None:
                with g.control_dependencies(updates):
                    updates.append(assign_add(global_step, 1).node)
            step = group(*updates)
            g.rename(step, scope[:-1])   # NOTE: TF names the update op after the optimizer
            return step

    def minimize(self, loss, global_step=None, var_list=None, name=None):
        return self.apply_gradients(self.compute_gradients(loss, var_list), global_step, name)

    def _lr(self, var):
        """The learning rate in var's dtype: TF1 casts a tensor rate (e.g. a float32
        exponential_decay) to each variable's dtype; graph ops never mix dtypes."""
        lr = self.learning_rate
        return ops.cast(lr, var.dtype) if isinstance(lr, Tensor) and lr.dtype != var.dtype \
            else lr

    # -- slots -------------------------------------------------------------------------------
    def slot(self, var, slot_name, init=None):
        key = (slot_name, id(var))
        v = self._slots.get(key)
        if v is None:
            g = var.graph
            with g.name_scope(None):
                value = np.zeros(var.shape, var.dtype) if init is None else init
                v = Variable(value, name=f"{var.node.name}/{slot_name}", trainable=False)
            self._slots[key] = v
        return v

    def get_slot(self, var, name):
        return self._slots.get((name, id(var)))

    def get_slot_names(self):
        return sorted({k for k, _ in self._slots})

    # -- the rule ------------------------------------------------------------------------------
    def _prepare(self, pairs):
        pass

    def _apply_one(self, grad, var) -> list:
        """The update nodes for one variable."""
        raise NotImplementedError

    def _finish(self, updates):
        return []


class GradientDescentOptimizer(Optimizer):
    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(learning_rate, name)

    def _apply_one(self, grad, var):
        new_var, _ = sgd_update(var, grad, None, self._lr(var))
        return [assign(var, new_var).node]


class MomentumOptimizer(Optimizer):
    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(learning_rate, name)
        self.momentum, self.use_nesterov = momentum, use_nesterov

    def _apply_one(self, grad, var):
        accum = self.slot(var, self.name)
        new_var, new = sgd_update(var, grad, accum, self._lr(var), self.momentum,
                                  nesterov=self.use_nesterov)
        return [assign(accum, new).node, assign(var, new_var).node]


class AdamOptimizer(Optimizer):
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08,
                 use_locking=False, name="Adam"):
        super().__init__(learning_rate, name)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self._powers = None

    def _prepare(self, pairs):
        var = pairs[0][1]
        if self._powers is None:
            g = var.graph
            with g.name_scope(None):
                dt = var.dtype
                self._powers = (Variable(np.array(self.beta1, dt), name="beta1_power",
                                         trainable=False),
                                Variable(np.array(self.beta2, dt), name="beta2_power",
                                         trainable=False))
        b1p, b2p = self._powers
        self._lr_t = self._lr(var) * ops.sqrt(1.0 - b2p) / (1.0 - b1p)

    def _apply_one(self, grad, var):
        m, v = self.slot(var, self.name), self.slot(var, self.name + "_1")
        new_var, m_new, v_new = adam_update_tf(var, grad, m, v, self._lr_t, self.beta1,
                                               self.beta2, self.epsilon)
        return [assign(m, m_new).node, assign(v, v_new).node, assign(var, new_var).node]

    def _finish(self, updates):
        b1p, b2p = self._powers
        with b1p.graph.control_dependencies(updates):
            return [assign(b1p, b1p * self.beta1).node, assign(b2p, b2p * self.beta2).node]


class RMSPropOptimizer(Optimizer):
    """TF1's RMSProp (rule in ops/updates.py): slots `rms` (starting at ones, as TF1),
    `momentum`, and `mg` when centered."""

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10,
                 use_locking=False, centered=False, name="RMSProp"):
        super().__init__(learning_rate, name)
        self.decay, self.momentum, self.epsilon = decay, momentum, epsilon
        self.centered = centered

    def _apply_one(self, grad, var):
        rms = self.slot(var, "rms", np.ones(var.shape, var.dtype))
        mom = self.slot(var, "momentum")
        mg = self.slot(var, "mg") if self.centered else None
        new_var, ms, m, new_mg = rmsprop_update_tf(var, grad, rms, mom, self._lr(var),
                                                   self.decay, self.momentum, self.epsilon,
                                                   mg)
        nodes = [assign(rms, ms).node, assign(mom, m).node, assign(var, new_var).node]
        return nodes + ([assign(mg, new_mg).node] if self.centered else [])


class FtrlOptimizer(Optimizer):
    """TF1's FTRL-Proximal (rule in ops/updates.py: ftrl_update_tf): the accumulator
    `<var>/Ftrl` (starting at initial_accumulator_value) and the linear term `<var>/Ftrl_1`
    (zeros), TF1's variable names (get_slot takes those names, not TF's "accum" / "linear")."""

    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="Ftrl", accum_name=None, linear_name=None,
                 l2_shrinkage_regularization_strength=0.0):
        if learning_rate_power > 0.0:
            raise ValueError(f"learning_rate_power ({learning_rate_power}) must be less than "
                             f"or equal to 0.")
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value ({initial_accumulator_value}) must be "
                             f"positive.")
        for what, v in (("l1_regularization_strength", l1_regularization_strength),
                        ("l2_regularization_strength", l2_regularization_strength),
                        ("l2_shrinkage_regularization_strength",
                         l2_shrinkage_regularization_strength)):
            if v < 0.0:
                raise ValueError(f"{what} {v} must be greater than or equal to 0.")
        super().__init__(learning_rate, name)
        self.power, self.initial = learning_rate_power, initial_accumulator_value
        self.l1, self.l2 = l1_regularization_strength, l2_regularization_strength
        self.shrinkage = l2_shrinkage_regularization_strength
        self.accum_name, self.linear_name = accum_name or name, linear_name or f"{name}_1"

    def _apply_one(self, grad, var):
        acc = self.slot(var, self.accum_name, np.full(var.shape, self.initial, var.dtype))
        lin = self.slot(var, self.linear_name)
        new_var, new_acc, new_lin = ftrl_update_tf(var, grad, acc, lin, self._lr(var),
                                                   self.power, self.l1, self.l2,
                                                   self.shrinkage)
        return [assign(acc, new_acc).node, assign(lin, new_lin).node,
                assign(var, new_var).node]


class AdagradOptimizer(Optimizer):
    """TF1's Adagrad: accum += g^2; var -= lr g / sqrt(accum), the accumulator starting at
    initial_accumulator_value (rule in ops/updates.py, without eps)."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        super().__init__(learning_rate, name)
        self.initial = initial_accumulator_value

    def _apply_one(self, grad, var):
        acc = self.slot(var, "Adagrad", np.full(var.shape, self.initial, var.dtype))
        new_var, total = adagrad_update(var, grad, acc, 1, self._lr(var), eps=0.0)
        return [assign(acc, total).node, assign(var, new_var).node]


class AdadeltaOptimizer(Optimizer):
    """TF1's Adadelta (TF1's defaults lr 0.001, rho 0.95, epsilon 1e-8; rule in
    ops/updates.py): slots `accum` and `accum_update`."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-08, use_locking=False,
                 name="Adadelta"):
        super().__init__(learning_rate, name)
        self.rho, self.epsilon = rho, epsilon

    def _apply_one(self, grad, var):
        acc, upd = self.slot(var, "accum"), self.slot(var, "accum_update")
        new_var, sq, delta = adadelta_update(var, grad, acc, upd, self._lr(var),
                                             self.rho, self.epsilon)
        return [assign(acc, sq).node, assign(upd, delta).node, assign(var, new_var).node]


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """learning_rate * decay_rate ** (global_step / decay_steps), the exponent floored with
    staircase=True, as tf.train.exponential_decay; a tensor to give an optimizer."""
    step = ops.cast(global_step, np.float32)
    p = step / float(decay_steps)
    if staircase:   # NOTE: the step count is never negative: truncation is floor
        p = ops.cast(ops.cast(p, np.int64), np.float32)
    return learning_rate * ops.pow(np.float32(decay_rate), p)

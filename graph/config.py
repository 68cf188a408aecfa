"""TF1's session configuration messages, accepted so that TF1 programs run unmodified.

`Session(config=ConfigProto(...))` and `Session.run(options=RunOptions(...),
run_metadata=RunMetadata())` take them and change nothing but the time limits
(`RunOptions.timeout_in_ms`, `ConfigProto.operation_timeout_in_ms`: a queue op waiting
longer raises errors.DeadlineExceededError, as TF1's): dualgrad runs on the CPU, places
nothing, and does not set the process's thread counts (a library is a guest in the user's
process: NumPy's and numba's threads are the user's to set, e.g. with NUMBA_NUM_THREADS).
`RunMetadata` stays empty. Fields are checked as protobuf checks them: an unknown field name
raises, so a typo is not silently dropped.

>>> from dualgrad import graph as tf
>>> config = tf.ConfigProto(allow_soft_placement=True)
>>> config.gpu_options.allow_growth = True
>>> with tf.Session(config=config) as sess:
...     float(sess.run(tf.constant(2.0) * 3.0, options=tf.RunOptions(
...         trace_level=tf.RunOptions.FULL_TRACE), run_metadata=tf.RunMetadata()))
6.0
"""
from __future__ import annotations

import copy

__all__ = ["ConfigProto", "GPUOptions", "GraphOptions", "OptimizerOptions", "RunOptions",
           "RunMetadata"]


class _Message:
    """A protobuf-like record: known fields with defaults, keyword construction."""
    FIELDS: dict = {}

    def __init__(self, **fields):
        for name, default in self.FIELDS.items():
            object.__setattr__(self, name, copy.deepcopy(default))
        for name, value in fields.items():
            if name not in self.FIELDS:
                raise ValueError(f'Protocol message {type(self).__name__} has no "{name}" '
                                 f'field.')
            setattr(self, name, value)

    def __setattr__(self, name, value):
        if name not in self.FIELDS:
            raise AttributeError(f'Assignment not allowed (no field "{name}" in protocol '
                                 f'message object {type(self).__name__}).')
        object.__setattr__(self, name, value)

    def __eq__(self, other):
        return type(self) is type(other) and all(
            getattr(self, k) == getattr(other, k) for k in self.FIELDS)

    def __repr__(self):
        changed = [f"{k}={getattr(self, k)!r}" for k, d in self.FIELDS.items()
                   if getattr(self, k) != d]
        return f"{type(self).__name__}({', '.join(changed)})"


class GPUOptions(_Message):
    FIELDS = {"per_process_gpu_memory_fraction": 0.0, "allow_growth": False,
              "allocator_type": "", "deferred_deletion_bytes": 0, "visible_device_list": "",
              "polling_active_delay_usecs": 0, "polling_inactive_delay_msecs": 0,
              "force_gpu_compatible": False}


class OptimizerOptions(_Message):
    L1, L0 = 0, -1                      # opt_level
    DEFAULT, OFF, ON_1, ON_2 = 0, -1, 1, 2   # global_jit_level
    FIELDS = {"do_common_subexpression_elimination": False, "do_constant_folding": False,
              "max_folded_constant_in_bytes": 0, "do_function_inlining": False,
              "opt_level": 0, "global_jit_level": 0}


class GraphOptions(_Message):
    FIELDS = {"enable_recv_scheduling": False, "optimizer_options": OptimizerOptions(),
              "build_cost_model": 0, "build_cost_model_after": 0, "infer_shapes": False,
              "place_pruned_graph": False, "enable_bfloat16_sendrecv": False,
              "timeline_step": 0}


class ConfigProto(_Message):
    FIELDS = {"device_count": {}, "intra_op_parallelism_threads": 0,
              "inter_op_parallelism_threads": 0, "use_per_session_threads": False,
              "session_inter_op_thread_pool": [], "placement_period": 0,
              "device_filters": [], "gpu_options": GPUOptions(),
              "allow_soft_placement": False, "log_device_placement": False,
              "graph_options": GraphOptions(), "operation_timeout_in_ms": 0,
              "isolate_session_state": False, "share_cluster_devices_in_session": False}


class RunOptions(_Message):
    NO_TRACE, SOFTWARE_TRACE, HARDWARE_TRACE, FULL_TRACE = 0, 1, 2, 3
    FIELDS = {"trace_level": 0, "timeout_in_ms": 0, "inter_op_thread_pool": 0,
              "output_partition_graphs": False, "report_tensor_allocations_upon_oom": False}


class RunMetadata(_Message):
    FIELDS = {"step_stats": None, "cost_graph": None, "partition_graphs": [],
              "function_graphs": []}


def check(value, cls, what):
    """`value` is None or a `cls` message, else TypeError (as TF1's Session checks)."""
    if value is not None and not isinstance(value, cls):
        raise TypeError(f"{what} must be a graph.{cls.__name__} (tf.{cls.__name__}), got "
                        f"{type(value).__name__}")
    return value

"""TensorBoard logs from eager code, with PyTorch's `torch.utils.tensorboard` API.

>>> import tempfile
>>> from dualgrad import eager
>>> from dualgrad.eager.utils.tensorboard import SummaryWriter
>>> with SummaryWriter(tempfile.mkdtemp()) as writer:
...     for step in range(3):
...         writer.add_scalar("loss", 1.0 / (step + 1), step)
...     writer.add_histogram("weights", eager.randn(100), 2)

Event files are written by the `tensorboard` package (the optional `tensorboard` extra:
pip install -e '.[tensorboard]'), so `tensorboard --logdir runs` shows them.
`add_graph` shows the graph of a compiled model (`compiler.compile`), the graph TensorBoard's
Graphs tab draws; a plain module is compiled and traced on `input_to_model` for it, as
PyTorch traces with `torch.jit.trace`.
"""
from __future__ import annotations

import os
import socket
from datetime import datetime

import numpy as np

from dualgrad.ops import summary as events

__all__ = ["SummaryWriter"]


def _scalar(value, tag):
    a = _array(value)
    if a.size != 1:
        raise ValueError(f"add_scalar {tag!r}: expected a scalar, got shape {a.shape}")
    return float(a.reshape(()))


def _array(values):
    """A Tensor's values (detached, as PyTorch's writer takes them) or any array-like."""
    if hasattr(values, "detach"):
        values = values.detach().numpy()
    return np.asarray(values)


class SummaryWriter:
    """Writes scalars, histograms and graphs to an event file in `log_dir` (default
    runs/DATE_TIME_HOST+comment), as torch.utils.tensorboard.SummaryWriter."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10,
                 flush_secs=120, filename_suffix=""):
        if purge_step is not None:
            raise NotImplementedError("SummaryWriter(purge_step=...) is not supported: "
                                      "write to a new log_dir instead")
        if log_dir is None:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self._options = (max_queue, flush_secs, filename_suffix)
        self._events = events.EventWriter(self.log_dir, *self._options)
        self._scalars_writers = {}     # add_scalars: one writer per sub-run

    def get_logdir(self) -> str:
        return self.log_dir

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        """One value (a float, a NumPy scalar or a one-element Tensor) at `global_step`."""
        if new_style or double_precision:
            raise NotImplementedError("add_scalar: new_style and double_precision are not "
                                      "supported (classic float32 scalars only)")
        value = events.scalar_value(tag, _scalar(scalar_value, tag))
        self._events.add_summary(events.Summary([value]), global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Several curves on one chart: each key is its own run, LOG_DIR/MAIN_TAG_KEY, and every
        value is logged under `main_tag` (as PyTorch does)."""
        for key, value in tag_scalar_dict.items():
            run = os.path.join(self.log_dir, f"{main_tag.replace('/', '_')}_{key}")
            writer = self._scalars_writers.get(run)
            if writer is None:
                writer = self._scalars_writers[run] = events.EventWriter(run, *self._options)
            value = events.scalar_value(main_tag, _scalar(value, main_tag))
            writer.add_summary(events.Summary([value]), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None):
        """A histogram of `values` (a Tensor or an array); `bins` as numpy.histogram takes it,
        or "tensorflow" (TensorFlow's exponential buckets, PyTorch's default)."""
        if max_bins is not None:
            raise NotImplementedError("add_histogram(max_bins=...) is not supported; pass bins")
        value = events.histogram_value(tag, _array(values), bins)
        self._events.add_summary(events.Summary([value]), global_step, walltime)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """The graph of a compiled model (`compiler.compile(model)`, traced: its last trace);
        with `input_to_model` (a Tensor or a tuple of them), the model is first compiled if
        needed and called on it to trace."""
        graph = _traced_graph(model, input_to_model)
        if verbose:
            print(f"add_graph: {len(graph.get_operations())} nodes")
        self._events.add_graph_def(events.graph_def(graph.get_operations()))

    def flush(self):
        self._events.flush()
        for w in self._scalars_writers.values():
            w.flush()

    def close(self):
        self._events.close()
        for w in self._scalars_writers.values():
            w.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _traced_graph(model, inputs):
    """The graph to show: a compiled function's last trace (traced on `inputs` if given or
    if it has none yet), or a dualgrad graph itself."""
    if hasattr(model, "get_operations"):
        return model
    if not hasattr(model, "traces"):
        if inputs is None:
            raise ValueError("add_graph: the eager engine records no graph; pass input_to_model "
                             "to trace the model, or a compiled model that has run "
                             "(compiler.compile(model))")
        from dualgrad import compiler    # NOTE: a late import, as graph's Session does
        model = compiler.compile(model)
    if inputs is not None:
        model(*(inputs if isinstance(inputs, (tuple, list)) else (inputs,)))
    if model.graph is None:
        raise ValueError("add_graph: the compiled model has not been traced yet; call it "
                         "once or pass input_to_model")
    return model.graph

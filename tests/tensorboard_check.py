"""What the TensorBoard tests check in an event directory, read with TensorBoard's own reader."""
from __future__ import annotations

import pytest

pytest.importorskip("tensorboard")

from tensorboard.backend import process_graph  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402


def read(logdir) -> EventAccumulator:
    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    return acc


def displayable(graph_def):
    """What TensorBoard's Graphs tab needs: unique node names, every input a node of the
    graph, and the plugin's own preparation step accepting it."""
    names = [n.name for n in graph_def.node]
    assert len(names) == len(set(names)), "duplicate node names"
    known = set(names)
    for n in graph_def.node:
        for i in n.input:
            src = i.lstrip("^").split(":")[0]
            assert src in known, f"node {n.name!r}: input {i!r} is not a node of the graph"
        assert n.op and "_output_shapes" in n.attr
    process_graph.prepare_graph_for_ui(graph_def)
    return known

"""comparisons: the same models written in both styles, measured side by side.

- `data`: the digits (offline), as rows, images and variable-length row sequences.
- `models/`: MLP, CNN, LSTM and transformer block, each as `*_eager.py` (PyTorch style) and
  `*_graph.py` (TensorFlow 1.x style), started from the same weights.
- `bench/`: `dualgrad bench` (eager, graph, optimised graph, compiled eager, and jax.jit and
  PyTorch from `refs/` as outside references).
- `shapes/`: the shape-error catalogue, `dualgrad shapes`.
- `cli`: the `dualgrad` command (`tour`, `train`, `bench`, `graph`, `shapes`).
"""
if __name__ != "dualgrad.comparisons":  # NOTE: a second copy would mean a second op registry
    raise ImportError(f"dualgrad's engines import under one root: write `from dualgrad import comparisons`, "
                      f"not `import {__name__}` (found {__file__})")

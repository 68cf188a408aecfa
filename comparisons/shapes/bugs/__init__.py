"""The shape-bug catalogue: small training scripts, each with one bug on the line marked `# BUG`.

Each bug is written once per style:

- `<bug>_eager.py`: PyTorch style. The forward pass and the loss are one top-level function,
  `def loss_fn(...)`, called from the training loop (`loss = loss_fn(x, y)`); backward and
  the optimizer step stay in the loop.
- `<bug>_graph.py`: TensorFlow 1.x style (placeholders, a `Session`, `sess.run` per step).

Compiled mode is not a file of its own: the harness runs the eager script with
`@compiler.compile` added above `def loss_fn`, as a user compiles a step function (the
decorator goes into the parsed module, which is compiled under the file's own name, so the
lines in messages and tracebacks are the file's). The script runs unchanged otherwise.
With its `# BUG` line fixed, every script trains to its end without a warning
(tests/comparisons/test_shapes.py checks both).
"""

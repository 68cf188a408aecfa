"""The shape-error observatory: real shape bugs, each written for every engine, run for real.

`bugs/` holds the catalogue (one small training script per bug and mode, the bug on the
line marked `# BUG`); `harness` runs one file and reports where its error surfaced;
`runner` runs them all in subprocesses and judges the messages; `cli` is `dualgrad shapes`.
See docs/shape-errors.md for the findings.
"""

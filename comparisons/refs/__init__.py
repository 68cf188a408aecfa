"""Outside references for the benchmark: the same workloads in JAX (`jax.jit`) and in
PyTorch eager. Each module is imported only when its library is installed."""

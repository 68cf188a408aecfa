"""The OpInfo idea: test cases generated from the op registry.

Every primitive in ops.REGISTRY and every composite in ops.COMPOSITES carries its samples
and a reference written against the NumPy API; the test modules of each engine iterate over
`cases()` so adding an op adds its tests.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from dualgrad import ops


@dataclass
class Case:
    name: str            # op or composite name
    fn: object           # the public function, e.g. ops.add
    sample: ops.Sample
    ref: object          # ref(np_module, *args, **attrs) or None
    differentiable: bool
    index: int

    @property
    def id(self):
        return f"{self.name}-{self.index}"

    def args(self, dtype=np.float64, seed=0):
        """Concrete arguments: shapes become random floats in the sample's domain."""
        return sample_arrays(self.sample, dtype, seed + 7919 * self.index)

    def float_positions(self, args):
        return [i for i, a in enumerate(args)
                if isinstance(a, np.ndarray) and a.dtype.kind == "f"]

    def random_inputs(self, args):
        """Positions of the args drawn at random (the ones gradients are checked for)."""
        return [i for i, (s, a) in enumerate(zip(self.sample.args, args))
                if isinstance(s, tuple) and isinstance(a, np.ndarray)]


def sample_arrays(sample, dtype=np.float64, seed=0):
    """A sample's args as values: a tuple is a shape (random floats in sample.domain),
    arrays and Python scalars are used as they are."""
    rng = np.random.default_rng(seed)
    lo, hi = sample.domain
    return [rng.uniform(lo, hi, a).astype(dtype) if isinstance(a, tuple) else a
            for a in sample.args]


def graph_args(arrays, unknown_dims=False):
    """Graph placeholders for the array args (and their feeds), Python scalars as they are."""
    from dualgrad import graph
    args, feeds = [], {}
    for a in arrays:
        if isinstance(a, np.ndarray):
            p = graph.placeholder(a.dtype, (None,) * a.ndim if unknown_dims else a.shape)
            feeds[p] = a
            args.append(p)
        else:
            args.append(a)
    return args, feeds


def _entries():
    for name, op in sorted(ops.REGISTRY.items()):
        yield name, op.fn, op.samples, op.ref, op.vjp is not None
    for name, c in sorted(ops.COMPOSITES.items()):
        yield name, c.fn, c.samples, c.ref, True


def cases(kind="ok"):
    """kind='ok': samples that must run; 'error': samples that must raise ShapeError."""
    out = []
    for name, fn, samples, ref, diff in _entries():
        for i, s in enumerate(samples):
            if (s.match is None) == (kind == "ok"):
                out.append(Case(name, fn, s, ref, diff and s.grad, i))
    return out


def params(kind="ok", where=lambda c: True):
    return [pytest.param(c, id=c.id) for c in cases(kind) if where(c)]


def numeric_grad(f, args, pos, eps=1e-6):
    """Central differences of the scalar f(*args) with respect to args[pos]."""
    x = args[pos]
    g = np.zeros_like(x)
    flat, gflat = x.reshape(-1), g.reshape(-1)
    for k in range(flat.size):
        old = flat[k]
        flat[k] = old + eps
        up = f(*args)
        flat[k] = old - eps
        down = f(*args)
        flat[k] = old
        gflat[k] = (up - down) / (2 * eps)
    return g


def _svd_part(usv, i):
    from dualgrad.ops.linalg_np import svd_signs
    return svd_signs(usv.U.numpy(), usv.Vh.numpy())[i]


def _torch_fn(name):
    """The torch function an op without a NumPy-API reference is checked against (PyTorch as
    the oracle: torch.special, torch, torch.linalg; the linalg primitives' parts by name)."""
    import torch
    la = torch.linalg
    parts = {"logabsdet": lambda a: la.slogdet(a).logabsdet, "det_sign": lambda a: la.slogdet(a).sign,
             "solve": la.solve, "eigh_values": lambda a: la.eigh(a).eigenvalues,
             "eigh_vectors": lambda a: la.eigh(a).eigenvectors,
             "svd_u": lambda a: _svd_part(la.svd(a, full_matrices=False), 0),
             "svd_s": lambda a: la.svd(a, full_matrices=False).S,
             "svd_vh": lambda a: _svd_part(la.svd(a, full_matrices=False), 1),
             "qr_q": lambda a: la.qr(a).Q, "qr_r": lambda a: la.qr(a).R,
             "pinv_tol": lambda a, tols: la.pinv(a, atol=tols[..., 0, 0], rtol=tols[..., 0, 1])}
    if name in parts:
        return parts[name]
    for module in (torch.special, torch.linalg, torch):
        if hasattr(module, name):
            return getattr(module, name)
    return None


def torch_ref(case, args):
    """The op on `args` computed by PyTorch, for ops whose entry has no reference."""
    torch = pytest.importorskip("torch")
    fn = _torch_fn(case.name)
    if fn is None:
        return None
    out = fn(*[torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args],
             **case.sample.attrs)
    return out.numpy() if isinstance(out, torch.Tensor) else out


def numpy_ref(case, args):
    """The reference evaluated with NumPy (special functions through scipy.special); ops
    whose entry has none are computed by PyTorch (torch_ref)."""
    if case.ref is None:
        return torch_ref(case, args)
    try:
        return case.ref(np, *args, **case.sample.attrs)
    except ImportError:      # a reference that needs jax (gelu's erf form)
        return None


def jax_ref_fn(case):
    """A function of the float args, evaluated with jax.numpy, or None without jax/ref."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    if case.ref is None:
        return None
    return lambda *a: case.ref(jnp, *a, **case.sample.attrs)

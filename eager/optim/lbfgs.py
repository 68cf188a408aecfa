"""L-BFGS as torch.optim.LBFGS (without a line search): `step(closure)` runs up to max_iter
iterations, each re-evaluating the loss through the closure.

>>> from dualgrad import eager
>>> from dualgrad.eager import optim
>>> x = eager.tensor([3.0, -2.0], requires_grad=True)
>>> opt = optim.LBFGS([x], lr=1.0)
>>> def closure():
...     opt.zero_grad()
...     loss = ((x - 1.0) ** 2).sum()
...     loss.backward()
...     return loss
>>> _ = opt.step(closure)
>>> [round(v, 4) for v in x.tolist()]
[1.0, 1.0]
"""
from __future__ import annotations

import numpy as np

from dualgrad.ops.updates import lbfgs_direction
from ..grad_mode import enable_grad
from .optimizer import Optimizer


class LBFGS(Optimizer):
    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if line_search_fn is not None:
            raise NotImplementedError(f"LBFGS(line_search_fn={line_search_fn!r}) is not "
                                      f"supported by dualgrad; use line_search_fn=None")
        max_eval = max_iter * 5 // 4 if max_eval is None else max_eval
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size, line_search_fn=None))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _flat_grad(self):
        return np.concatenate([np.zeros(p._array.size, p._array.dtype) if p.grad is None
                               else p.grad._array.reshape(-1) for p in self._params])

    def _add(self, t, d):
        offset = 0
        for p in self._params:
            n = p._array.size
            p._array += (t * d[offset:offset + n]).reshape(p._array.shape).astype(p._array.dtype)
            offset += n

    def step(self, closure):
        if closure is None:
            raise RuntimeError("LBFGS.step needs a closure that re-evaluates the model and "
                               "returns the loss")
        group = self.param_groups[0]
        st = self.state[self._params[0]]
        st.setdefault("func_evals", 0)
        st.setdefault("n_iter", 0)
        with enable_grad():
            orig_loss = closure()
        loss, evals = float(orig_loss), 1
        st["func_evals"] += 1
        g = self._flat_grad()
        if np.abs(g).max() <= group["tolerance_grad"]:
            return orig_loss
        self._iterate(closure, group, st, loss, g, evals)
        return orig_loss

    def _iterate(self, closure, group, st, loss, g, evals):
        d, t = st.get("d"), st.get("t")
        old_dirs, old_stps, ro = st.get("old_dirs"), st.get("old_stps"), st.get("ro")
        h_diag, prev_g = st.get("H_diag"), st.get("prev_flat_grad")
        n_iter = 0
        while n_iter < group["max_iter"]:
            n_iter += 1
            st["n_iter"] += 1
            if st["n_iter"] == 1:
                d, old_dirs, old_stps, ro, h_diag = -g, [], [], [], 1.0
            else:
                y, s = g - prev_g, d * t
                ys = float(np.dot(y, s))
                if ys > 1e-10:
                    if len(old_dirs) == group["history_size"]:
                        old_dirs.pop(0), old_stps.pop(0), ro.pop(0)
                    old_dirs.append(y), old_stps.append(s), ro.append(1.0 / ys)
                    h_diag = ys / float(np.dot(y, y))
                d = lbfgs_direction(g, old_dirs, old_stps, ro, h_diag)
            prev_g, prev_loss = g.copy(), loss
            t = (min(1.0, 1.0 / float(np.abs(g).sum())) if st["n_iter"] == 1 else 1.0) \
                * group["lr"]
            if float(np.dot(g, d)) > -group["tolerance_change"]:
                break
            self._add(t, d)
            done = n_iter == group["max_iter"]
            if not done:
                with enable_grad():
                    loss = float(closure())
                g = self._flat_grad()
                evals += 1
                st["func_evals"] += 1
            if done or evals >= group["max_eval"] or np.abs(g).max() <= group["tolerance_grad"]:
                break
            if np.abs(d * t).max() <= group["tolerance_change"] \
                    or abs(loss - prev_loss) < group["tolerance_change"]:
                break
        st.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                  prev_flat_grad=prev_g, prev_loss=prev_loss)

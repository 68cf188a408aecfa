"""Helpers for the TF1-API tests: run fetches with the optimiser off and on (the results
must agree), and compare `graph.gradients` with float64 central differences."""
import numpy as np

from dualgrad import graph as tf


def run_both(fetches, feed=None):
    """sess.run(fetches, feed) with optimize=False and optimize=True; equal results."""
    outs = []
    for opt in (False, True):
        with tf.Session(optimize=opt) as s:
            outs.append(s.run(fetches, feed))
    flat = [outs[0]] if not isinstance(outs[0], list) else outs[0]
    flat_opt = [outs[1]] if not isinstance(outs[1], list) else outs[1]
    for a, b in zip(flat, flat_opt):
        np.testing.assert_allclose(np.asarray(a, np.float64) if np.asarray(a).dtype != bool
                                   else a, b, rtol=1e-6, atol=1e-7)
    return outs[0]


def check_grad(build, *values, rtol=1e-5, atol=1e-7, eps=1e-6):
    """build(*placeholders) -> a tensor; d sum(out * w) / d inputs from graph.gradients
    against central differences, in float64, with the optimiser off and on."""
    tf.reset_default_graph()
    values = [np.asarray(v, np.float64) for v in values]
    phs = [tf.placeholder(tf.float64, v.shape) for v in values]
    out = build(*phs)
    w = tf.placeholder(out.dtype, out.shape)   # NOTE: out's dims may be known only at run time
    with tf.Session() as s:
        wv = np.random.default_rng(1).standard_normal(s.run(out, dict(zip(phs, values))).shape)
    loss = tf.reduce_sum(out * w)
    grads = tf.gradients(loss, phs)
    for opt in (False, True):
        with tf.Session(optimize=opt) as s:
            got = s.run(grads, {w: wv, **dict(zip(phs, values))})

            def f(*vs):
                return float(s.run(loss, {w: wv, **dict(zip(phs, vs))}))
            for k, v in enumerate(values):
                num = np.zeros_like(v)
                for j in range(v.size):
                    up, down = [x.copy() for x in values], [x.copy() for x in values]
                    up[k].reshape(-1)[j] += eps
                    down[k].reshape(-1)[j] -= eps
                    num.reshape(-1)[j] = (f(*up) - f(*down)) / (2 * eps)
                np.testing.assert_allclose(got[k], num, rtol=rtol, atol=atol)

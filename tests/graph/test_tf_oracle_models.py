"""Real tf.compat.v1 as the oracle beyond single ops: layers, RNN cells, optimisers step by
step, control flow with gradients, initialisers, and TF1 programs trained side by side.

Weights are made equal by constant initialisers, or by reading TF's initial values and
feeding them to dualgrad's variables (TF's random draws cannot be reproduced). Every graph
runs in dualgrad unoptimised and optimised. Cap: shapes of a few dozen elements, 3-5
training steps per optimiser and program; layers and cells need tf_keras
(`TF_USE_LEGACY_KERAS=1`), which the `tf` extra installs.
"""
import numpy as np
import pytest

pytest.importorskip("tensorflow")

from dualgrad import graph as dg  # noqa: E402

from . import tf_oracle as O  # noqa: E402

RNG = np.random.default_rng(3)
X = RNG.standard_normal((4, 3)).astype(np.float32)
Y = RNG.standard_normal((4, 2)).astype(np.float32)
W0 = RNG.standard_normal((3, 2)).astype(np.float32)


@pytest.fixture(scope="module")
def tf():
    return O.load_tf()


def run_tf(tf, build, steps=1, feed_vars=False):
    """build(tf1) -> (fetches, train_op or None); each step's fetches, then TF's variables."""
    tf1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        fetches, train = build(tf1)
        init = tf1.global_variables_initializer()
        with tf1.Session(graph=g) as s:
            s.run(init)
            vars0 = {v.op.name: s.run(v) for v in tf1.global_variables()}
            out = []
            for _ in range(steps):
                out.append(s.run(fetches))
                if train is not None:
                    s.run(train)
    return out, vars0


def run_dg(build, steps=1, values=None):
    """The same in dualgrad, unoptimised and optimised; `values` ({name: array}) are assigned
    to the variables of those names after initialisation."""
    outs = []
    for opt in (False, True):
        g = dg.Graph()
        with g.as_default():
            fetches, train = build(dg)
            init = dg.global_variables_initializer()
            byname = {v.name.split(":")[0]: v for v in dg.global_variables()}
            sets = [dg.assign(byname[n], v) for n, v in (values or {}).items()]
            with dg.Session(graph=g, optimize=opt) as s:
                s.run(init)
                s.run(sets)
                out = []
                for _ in range(steps):
                    out.append(s.run(fetches))
                    if train is not None:
                        s.run(train)
        outs.append(out)
    return outs


def assert_close(tf_out, dg_outs, rtol=1e-5, atol=1e-6):
    for dg_out in dg_outs:
        for step, (a, b) in enumerate(zip(tf_out, dg_out)):
            for k, (x, y) in enumerate(zip(_flat(a), _flat(b))):
                x, y = np.asarray(x), np.asarray(y)
                assert x.dtype == y.dtype and x.shape == y.shape, (step, k, x.dtype, y.dtype,
                                                                   x.shape, y.shape)
                np.testing.assert_allclose(y, x, rtol=rtol, atol=atol,
                                           err_msg=f"step {step}, fetch {k}")


def _flat(a):
    if isinstance(a, (list, tuple)):
        return [y for x in a for y in _flat(x)]
    if isinstance(a, dict):
        return [y for k in sorted(a) for y in _flat(a[k])]
    return [a]


# -- optimisers: apply_gradients step by step from the same weights -------------------------------
OPTIMIZERS = {
    "GradientDescent": lambda t: t.train.GradientDescentOptimizer(0.1),
    "Momentum": lambda t: t.train.MomentumOptimizer(0.1, 0.9),
    "Momentum-nesterov": lambda t: t.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    "Adam": lambda t: t.train.AdamOptimizer(0.05),
    "RMSProp": lambda t: t.train.RMSPropOptimizer(0.05),
    "RMSProp-momentum-centered": lambda t: t.train.RMSPropOptimizer(0.05, momentum=0.5,
                                                                    centered=True),
    "Adagrad": lambda t: t.train.AdagradOptimizer(0.1),
    "Adadelta": lambda t: t.train.AdadeltaOptimizer(1.0),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_steps_equal_tf(tf, name):
    def build(t):
        w = t.Variable(W0, name="w")
        b = t.Variable(np.zeros(2, np.float32), name="b")
        loss = t.reduce_mean(t.square(t.matmul(X, w) + b - Y))
        opt = OPTIMIZERS[name](t)
        step = opt.apply_gradients(opt.compute_gradients(loss, [w, b]))
        return [loss, w, b], step
    tf_out, _ = run_tf(tf, build, steps=4)
    assert_close(tf_out, run_dg(build, steps=4), rtol=1e-5, atol=1e-6)


# -- layers with the same weights ---------------------------------------------------------------
def _layers():
    k = RNG.standard_normal((3, 3, 2, 4)).astype(np.float32) * 0.3
    img = RNG.standard_normal((2, 5, 5, 2)).astype(np.float32)
    return {
        "dense": lambda t: t.layers.dense(X, 2, activation=t.nn.relu,
                                          kernel_initializer=t.constant_initializer(W0),
                                          bias_initializer=t.constant_initializer(0.1)),
        "conv2d-same": lambda t: t.layers.conv2d(img, 4, 3, padding="same",
                                                 kernel_initializer=t.constant_initializer(k)),
        "conv2d-valid-stride": lambda t: t.layers.conv2d(
            img, 4, 3, strides=2, padding="valid", kernel_initializer=t.constant_initializer(k)),
        "max_pooling2d": lambda t: t.layers.max_pooling2d(img, 2, 2, padding="same"),
        "average_pooling2d": lambda t: t.layers.average_pooling2d(img, 3, 2, padding="same"),
        "batch_normalization-inference": lambda t: t.layers.batch_normalization(
            img, training=False, moving_mean_initializer=t.constant_initializer(0.2),
            moving_variance_initializer=t.constant_initializer(1.5),
            gamma_initializer=t.constant_initializer(0.7)),
        "batch_normalization-training": lambda t: t.layers.batch_normalization(
            img, training=True),
        "dropout-inference": lambda t: t.layers.dropout(X, 0.5, training=False),
        "flatten": lambda t: t.layers.flatten(img),
    }


@pytest.mark.parametrize("name", sorted(_layers()))
def test_layer_equals_tf(tf, name):
    layer = _layers()[name]

    def build(t):
        y = layer(t)
        xs = [v for v in t.trainable_variables()]
        loss = t.reduce_sum(y * y)
        return [y, t.gradients(loss, xs)] if xs else [y], None
    tf_out, _ = run_tf(tf, build)
    assert_close(tf_out, run_dg(build), rtol=1e-4, atol=1e-5)


# -- RNN cells fed TF's initial weights ---------------------------------------------------------
CELLS = {
    "BasicLSTMCell": lambda t: t.nn.rnn_cell.BasicLSTMCell(4),
    "LSTMCell": lambda t: t.nn.rnn_cell.LSTMCell(4, use_peepholes=True),
    "GRUCell": lambda t: t.nn.rnn_cell.GRUCell(4),
    "BasicRNNCell": lambda t: t.nn.rnn_cell.BasicRNNCell(4),
}


@pytest.mark.parametrize("name", sorted(CELLS))
def test_dynamic_rnn_equals_tf(tf, name):
    seq = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    lengths = np.array([5, 3], np.int32)

    def build(t):
        x = t.constant(seq)
        out, state = t.nn.dynamic_rnn(CELLS[name](t), x, sequence_length=lengths,
                                      dtype=t.float32)
        loss = t.reduce_sum(out * out)
        return [out, state, t.gradients(loss, [x] + t.trainable_variables())], None
    tf_out, tf_vars = run_tf(tf, build)
    assert_close(tf_out, run_dg(build, values=tf_vars), rtol=1e-4, atol=1e-5)


# -- control flow and its gradients -----------------------------------------------------------
def test_cond_and_while_loop_with_gradients_equal_tf(tf):
    def build(t):
        x = t.constant(np.array([0.5, -1.5, 2.0], np.float32))
        p = t.reduce_sum(x) > 0
        y = t.cond(p, lambda: t.sin(x) * x, lambda: t.exp(x))
        _, z = t.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * x + 1.0),
                            [t.constant(0), t.ones_like(x)])
        return [y, z, t.gradients(t.reduce_sum(y) + t.reduce_sum(z), x)], None
    tf_out, _ = run_tf(tf, build)
    assert_close(tf_out, run_dg(build))


# -- initialisers: seeded draws differ from TF's generator; the distributions agree ------------
INITS = {
    "glorot_uniform_initializer": {}, "glorot_normal_initializer": {},
    "random_normal_initializer": {"stddev": 0.5}, "truncated_normal_initializer": {"stddev": 0.5},
    "random_uniform_initializer": {"minval": -0.3, "maxval": 0.7},
    "variance_scaling_initializer": {"scale": 2.0, "mode": "fan_in"},
    "zeros_initializer": {}, "ones_initializer": {},
}


@pytest.mark.parametrize("name", sorted(INITS))
def test_initializer_distribution_equals_tf(tf, name):
    def build(t):
        init = getattr(t, name)(**INITS[name])
        return [t.get_variable("v", [200, 300], initializer=init)], None
    (tf_v,), _ = run_tf(tf, build)
    for dg_v in [o[0][0] for o in run_dg(build)]:
        assert dg_v.dtype == tf_v[0].dtype and dg_v.shape == tf_v[0].shape
        bounded = name != "random_normal_initializer"   # NOTE: else extremes are noise
        for stat in (np.mean, np.std) + ((np.min, np.max) if bounded else ()):
            assert abs(stat(dg_v) - stat(tf_v[0])) <= 0.02 * max(1.0, abs(stat(tf_v[0]))), stat

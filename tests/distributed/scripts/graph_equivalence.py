"""Horovod-style graphs: 2 ranks on half batches == 1 process on the whole batch (mpiexec -n 2).

Each rank starts from different random weights; broadcast_global_variables(0) makes them
rank 0's. Every rank also trains the plain graph on the whole batch and compares variables.
"""
import numpy as np

from dualgrad import graph
from dualgrad.graph import distributed as hvd

STEPS, BATCH = 4, 16


def build(make_opt, seed, distributed):
    g = graph.Graph()
    with g.as_default():
        graph.set_random_seed(seed)
        x = graph.placeholder(graph.float32, (None, 6), name="x")
        y = graph.placeholder(graph.float32, (None, 2), name="y")
        h = graph.nn.dense(x, 12, activation=graph.nn.tanh, name="dense1")
        out = graph.nn.dense(h, 2, name="dense2")
        loss = graph.reduce_mean(graph.square(out - y))
        opt = make_opt()
        if distributed:
            opt = hvd.DistributedOptimizer(opt)
        train = opt.minimize(loss)
        init = graph.global_variables_initializer()
        bcast = hvd.broadcast_global_variables(0) if distributed else None
    sess = graph.Session(graph=g)
    sess.run(init)
    if bcast is not None:
        sess.run(bcast)
    return sess, x, y, train, g


def check(name, make_opt):
    rank, world = hvd.rank(), hvd.size()
    ref = build(make_opt, seed=10, distributed=False)      # rank 0's start
    mine = build(make_opt, seed=10 + rank, distributed=True)
    rng = np.random.default_rng(2)
    half = BATCH // world
    for step in range(STEPS):
        xb = rng.standard_normal((BATCH, 6)).astype(np.float32)
        yb = rng.standard_normal((BATCH, 2)).astype(np.float32)
        part = slice(rank * half, (rank + 1) * half)
        mine[0].run(mine[3], {mine[1]: xb[part], mine[2]: yb[part]})
        ref[0].run(ref[3], {ref[1]: xb, ref[2]: yb})
        with ref[4].as_default():
            want = ref[0].run(graph.trainable_variables())
        with mine[4].as_default():
            got = mine[0].run(graph.trainable_variables())
        for w, gv in zip(want, got):
            np.testing.assert_allclose(gv, w, rtol=2e-5, atol=2e-6, err_msg=f"{name} {step}")
    print(f"rank {rank}: graph {name} matches one process for {STEPS} steps", flush=True)


hvd.init()
check("momentum", lambda: graph.train.MomentumOptimizer(0.1, 0.9))
check("adam", lambda: graph.train.AdamOptimizer(0.01))

# hvd.allreduce and hvd.broadcast are graph ops too
with graph.Graph().as_default():
    t = graph.constant(np.full(3, hvd.rank() + 1.0, np.float32))
    both = [hvd.allreduce(t), hvd.allreduce(t, op=hvd.Sum), hvd.broadcast(t, root_rank=1)]
    with graph.Session() as s:
        mean, total, ones = s.run(both)
assert mean.tolist() == [1.5] * 3 and total.tolist() == [3.0] * 3 and ones.tolist() == [2.0] * 3

# a model built differently on one rank: a clear error on every rank, not a wrong average
with graph.Graph().as_default():
    w = graph.Variable(np.zeros((4, 3 + hvd.rank()), np.float32), name="w")
    bcast = hvd.broadcast_global_variables(0)
    with graph.Session() as s:
        s.run(graph.global_variables_initializer())
        try:
            s.run(bcast)
        except Exception as e:   # noqa: BLE001 - the session names the node that failed
            msg = str(e)
assert "ranks disagree on the collective (rank 0: broadcast of shape (4, 3)" in msg, msg
print(f"rank {hvd.rank()}: graph usage ok")
hvd.shutdown()

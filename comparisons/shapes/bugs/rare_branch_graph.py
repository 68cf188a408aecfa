"""A bug on a rarely taken branch: every 10th step adds pixel jitter, and the jitter has the wrong width.

An MLP on the digits, TensorFlow 1.x style: the branch is a `graph.cond` on a fed boolean,
so both branches are built, and shape-checked, before the first step.
"""
from dualgrad import graph

from dualgrad.comparisons.data import digits

BATCH, STEPS, JITTER_EVERY = 32, 20, 10
d = digits()

x = graph.placeholder(graph.float32, (None, 64), name="x")
y = graph.placeholder(graph.int64, (None,), name="y")
augment = graph.placeholder(graph.bool, (), name="augment")
x_in = graph.cond(augment,
                  lambda: x + 0.05 * graph.random_normal((1, 32)),  # BUG: the images have 64 pixels
                  lambda: x)
h = graph.nn.dense(x_in, 32, activation=graph.nn.relu, name="hidden")
logits = graph.nn.dense(h, 10, name="out")
loss = graph.reduce_mean(graph.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train_op = graph.train.MomentumOptimizer(0.1, 0.9).minimize(loss)

with graph.Session() as sess:
    sess.run(graph.global_variables_initializer())
    for step in range(STEPS):
        idx = slice(step * BATCH, (step + 1) * BATCH)
        feed = {x: d.x_train[idx], y: d.y_train[idx],
                augment: step % JITTER_EVERY == JITTER_EVERY - 1}
        loss_value, _ = sess.run([loss, train_op], feed)
print(f"final loss {loss_value:.3f}")

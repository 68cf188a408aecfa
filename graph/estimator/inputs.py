"""`tf.estimator.inputs.numpy_input_fn`: an input_fn over NumPy arrays, for Estimators.

The input_fn it returns builds, in the graph it is called in, an iterator over batches of
the examples (rows along axis 0): the epochs follow each other in one stream cut into
batches of `batch_size` (a batch may hold the end of one epoch and the start of the next,
as TF's queue gives them), the last batch is smaller when `num_epochs` ends the stream, and
running past the end raises `errors.OutOfRangeError`, which ends an Estimator's loop. With
`shuffle=True` each epoch visits every example once in a new random order (TF shuffles
through a queue of `queue_capacity` examples, so neither order matches the other; with
RunConfig's tf_random_seed dualgrad's is the same from run to run). Arrays keep their dtypes.
pandas_input_fn is not provided (pandas is not among dualgrad's dependencies).

>>> import numpy as np
>>> from dualgrad import graph as tf
>>> fn = tf.estimator.inputs.numpy_input_fn({"a": np.arange(5.0)}, np.arange(5), batch_size=2,
...                                         num_epochs=2, shuffle=False)
>>> features, labels = fn()
>>> with tf.Session() as sess:
...     try:
...         while True:
...             print(sess.run(labels))
...     except tf.errors.OutOfRangeError:
...         pass
[0 1]
[2 3]
[4 0]
[1 2]
[3 4]
"""
from __future__ import annotations

import numpy as np

from dualgrad.ops.core import located

from ..data import Dataset

__all__ = ["numpy_input_fn"]


def _arrays(d, what):
    if isinstance(d, dict):
        if not d:
            raise located(f"{what} cannot be an empty dict", ValueError)
        return {k: np.asarray(v) for k, v in d.items()}
    return np.asarray(d)


def _lengths(x, y):
    shapes = [(k, a.shape) for part in (x, y) if part is not None
              for k, a in (part.items() if isinstance(part, dict) else [(None, part)])]
    if any(len(s) == 0 for _, s in shapes) or len({s[0] for _, s in shapes}) != 1:
        raise located(f"Length of tensors in x and y is mismatched. All elements in x and y "
                      f"must have the same length (axis 0).\nShapes: {shapes}", ValueError)
    return shapes[0][1][0]


def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000,
                   num_threads=1):
    """An input_fn giving `(features, labels)` batches of `x` (a dict of arrays, giving a
    dict of tensors; or one array, giving one tensor) and `y` (an array or a dict of arrays;
    the input_fn gives features alone when y is None). `shuffle` must be given, True or
    False (ValueError otherwise, as TF); num_epochs=None repeats forever. queue_capacity and
    num_threads are accepted: there is no queue, and the order does not depend on them."""
    if not isinstance(shuffle, bool):
        raise located(f"shuffle must be provided and explicitly set as boolean (it is "
                      f"recommended to set it as True for training); got {shuffle}", ValueError)
    if not isinstance(x, (dict, np.ndarray)):
        raise located(f"x must be a dict or array; got {type(x).__name__}", TypeError)
    if num_epochs is not None and int(num_epochs) < 1:
        raise located(f"num_epochs must be a positive integer or None (forever), got "
                      f"{num_epochs}", ValueError)
    if int(batch_size) < 1:
        raise located(f"batch_size must be positive, got {batch_size}", ValueError)
    x = _arrays(x, "x")
    y = None if y is None else _arrays(y, "y")
    if isinstance(x, dict) and isinstance(y, dict) and set(x) & set(y):
        raise located(f"{len(set(x) & set(y))} duplicate keys are found in both x and y: "
                      f"{sorted(set(x) & set(y))}", ValueError)
    n = _lengths(x, y)

    def input_fn():
        data = Dataset.from_tensor_slices(x if y is None else (x, y))
        if shuffle:
            data = data.shuffle(n, reshuffle_each_iteration=True)
        data = data.repeat(num_epochs).batch(int(batch_size))
        return data.make_one_shot_iterator().get_next()
    return input_fn

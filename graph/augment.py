"""Random draws that pick and place values (`multinomial` / `random.categorical`,
`random_crop`, `image.random_flip_left_right`, `image.random_flip_up_down`), file reads and
CSV parsing for input pipelines (`read_file`, `decode_csv`), and the colour / matrix helpers
old TF1 programs call (`image.rgb_to_grayscale`, `diag`). Draws come from dualgrad's
generator (`set_random_seed` seeds it), or from the op's own `seed`, not TF's stream.

>>> import numpy as np
>>> from dualgrad import graph as tf
>>> s = tf.multinomial(np.log([[0.0001, 0.9999]], dtype=np.float32), 5, seed=1)
>>> tf.Session().run(s).tolist()
[[1, 1, 1, 1, 1]]
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import Spec, fmt_shape

from .core import _graph_of, _lift, check_tf1_types, convert_to_tensor, graph_op
from .dtypes import as_dtype
from .array_ops import eye
from .math_ops import expand_dims, named, reduce_sum, reshape

__all__ = ["multinomial", "categorical", "random_crop", "random_flip_left_right",
           "random_flip_up_down", "rgb_to_grayscale", "diag", "read_file", "decode_csv"]


def _rng(state, node):
    seed = node.attrs.get("seed")
    if seed is None:
        return ops.generator()
    return state.rngs.setdefault(node.name, np.random.default_rng(seed))


def _node(op, inputs, attrs, specs, name):
    g = _graph_of(inputs)
    ts = [_lift(g, x, inputs) for x in inputs]
    return g.create_node(op, ts, attrs, specs, name).outputs


# -- categorical draws ------------------------------------------------------------------------
def _categorical_kernel(node):
    n, dt = node.attrs["num_samples"], node.attrs["dtype"]

    def run(state, logits):
        rng = _rng(state, node)
        z = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        return np.stack([rng.choice(p.shape[1], size=n, p=row) for row in p]).astype(dt)
    return run, True


CATEGORICAL = graph_op("categorical", _categorical_kernel)


def multinomial(logits, num_samples, seed=None, name=None, output_dtype=None):
    """`num_samples` class indices per row of `logits` (batch, classes), drawn with
    probabilities softmax(logits), as TF's multinomial (int64 by default)."""
    dt = as_dtype(output_dtype or np.int64)
    lead = getattr(logits, "shape", np.shape(logits))[0]
    return _node(CATEGORICAL, [logits], {"num_samples": int(num_samples), "dtype": dt,
                                         "seed": seed},
                 [Spec((lead, int(num_samples)), dt)], name or "multinomial")[0]


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    return multinomial(logits, num_samples, seed, name, dtype)


# -- crops and flips ----------------------------------------------------------------------------
def _crop_kernel(node):
    size = node.attrs["size"]

    def run(state, value):
        rng = _rng(state, node)
        if any(s > d for s, d in zip(size, value.shape)):
            raise ValueError(f"random_crop: Need value.shape >= size, got {value.shape} and "
                             f"{size}")
        start = [int(rng.integers(d - s + 1)) for s, d in zip(size, value.shape)]
        return value[tuple(slice(b, b + s) for b, s in zip(start, size))].copy()
    return run, True


RANDOM_CROP = graph_op("random_crop", _crop_kernel)


def random_crop(value, size, seed=None, name=None):
    """A random window of shape `size` (a list of ints, one per dim) out of `value`."""
    size = tuple(int(s) for s in size)
    dt = getattr(value, "dtype", np.asarray(value).dtype)
    return _node(RANDOM_CROP, [value], {"size": size, "seed": seed}, [Spec(size, dt)],
                 name or "random_crop")[0]


def _flip_kernel(node):
    axis = node.attrs["axis"]

    def run(state, image):
        ax = axis if image.ndim == 3 else axis + 1
        if image.ndim == 3:
            return np.flip(image, ax).copy() if _rng(state, node).uniform() < 0.5 else image
        flips = _rng(state, node).uniform(size=image.shape[0]) < 0.5
        out = image.copy()
        out[flips] = np.flip(image[flips], ax)
        return out
    return run, True


RANDOM_FLIP = graph_op("random_flip", _flip_kernel)


def _random_flip(image, axis, seed, name):
    dt = getattr(image, "dtype", np.asarray(image).dtype)
    shape = getattr(image, "shape", np.shape(image))
    return _node(RANDOM_FLIP, [image], {"axis": axis, "seed": seed},
                 [Spec(None if shape is None else tuple(shape), dt)], name)[0]


def random_flip_left_right(image, seed=None):
    """Each HWC image (or each of a batch NHWC) mirrored left-right with probability 1/2."""
    return _random_flip(image, 1, seed, "random_flip_left_right")


def random_flip_up_down(image, seed=None):
    return _random_flip(image, 0, seed, "random_flip_up_down")


# -- composites -----------------------------------------------------------------------------------
@named
def rgb_to_grayscale(images):
    """The luma of RGB images (..., 3) -> (..., 1), TF's weights 0.2989, 0.5870, 0.1140,
    computed as TF does: in float32 on images scaled to [0, 1] (an integer image divided by
    its dtype's max), the result scaled back to the input's dtype (times max + 0.5, truncated)."""
    images = convert_to_tensor(images)
    dt = np.dtype(images.dtype)
    if dt.kind not in "iuf":
        raise TypeError(f"rgb_to_grayscale: image dtype must be floating point or integer, "
                        f"got {dt} ('{images.name}')")
    flt = ops.cast(images, np.float32) if dt != np.float32 else images
    if dt.kind in "iu":
        flt = flt * np.float32(1.0 / np.iinfo(dt).max)
    gray = reduce_sum(flt * np.array([0.2989, 0.5870, 0.1140], np.float32), axis=-1,
                      keepdims=True)
    if dt.kind in "iu":
        gray = gray * np.float32(np.iinfo(dt).max + 0.5)
    return gray if dt == np.float32 else ops.cast(gray, dt)


@named
def diag(diagonal):
    """tf.diag: of a k-d `diagonal` of shape s, the 2k-d tensor of shape s + s that holds
    diagonal[i] at [i, i] and zeros elsewhere (a square matrix for a 1-d diagonal)."""
    diagonal = convert_to_tensor(diagonal)
    check_tf1_types("diag", diagonal)
    shape = tuple(diagonal.shape)
    if None in shape:
        raise NotImplementedError(f"diag: a diagonal of known shape only, got "
                                  f"{fmt_shape(shape)}")
    n = int(np.prod(shape, dtype=np.int64))
    flat = reshape(diagonal, [n])
    return reshape(expand_dims(flat, 1) * eye(n, dtype=diagonal.dtype), list(shape * 2))


# -- files and CSV ------------------------------------------------------------------------------
def _read_file_kernel(node):
    def run(filename):
        with open(np.asarray(filename).item(), "rb") as f:
            return np.asarray(f.read(), dtype=object)
    return run, False


READ_FILE = graph_op("read_file", _read_file_kernel)


def read_file(filename, name=None):
    """The bytes of a file, as a scalar string tensor."""
    return _node(READ_FILE, [np.asarray(filename, dtype=object) if isinstance(filename, str)
                             else filename], {}, [Spec((), np.dtype(object))],
                 name or "ReadFile")[0]


def _csv_kernel(node):
    defaults, delim = node.attrs["defaults"], node.attrs["delim"]

    def field(text, default, col):
        if text == "":
            if default is None:
                raise ValueError(f"decode_csv: field {col} is empty and has no default")
            return default
        return type(default)(text) if default is not None else text

    def run(records):
        recs = np.asarray(records, dtype=object)
        cols = [[] for _ in defaults]
        for r in recs.reshape(-1):
            parts = (r.decode() if isinstance(r, bytes) else str(r)).split(delim)
            if len(parts) != len(defaults):
                raise ValueError(f"decode_csv: Expect {len(defaults)} fields but have "
                                 f"{len(parts)} in record {r!r}")
            for i, (p, d) in enumerate(zip(parts, defaults)):
                cols[i].append(field(p, d[0] if d else None, i))
        return tuple(np.asarray(c, dtype=dt).reshape(recs.shape)
                     for c, dt in zip(cols, node.attrs["dtypes"]))
    return run, False


DECODE_CSV = graph_op("decode_csv", _csv_kernel)


def _csv_dtype(default):
    if not default:
        raise ValueError("decode_csv: a default of [] needs record_defaults' dtype; give a "
                         "value, e.g. [0.0]")
    v = default[0]
    return np.dtype(object) if isinstance(v, (str, bytes)) else np.dtype(np.int32) \
        if isinstance(v, (int, np.integer)) else np.dtype(np.float32)


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None,
               na_value="", select_cols=None):
    """One tensor per column of the CSV lines in `records`; each column's type and default
    (for an empty field) from `record_defaults` ([[0.0], [0], [""]])."""
    if select_cols is not None:
        raise NotImplementedError("decode_csv: select_cols is not supported")
    dtypes = [_csv_dtype(d) for d in record_defaults]
    shape = getattr(records, "shape", np.shape(records))
    specs = [Spec(None if shape is None else tuple(shape), dt) for dt in dtypes]
    defaults = [list(d) for d in record_defaults]
    return list(_node(DECODE_CSV, [records], {"defaults": defaults, "delim": field_delim,
                                              "dtypes": dtypes}, specs, name or "DecodeCSV"))

"""What a TF1 program prints and names, against real tf.compat.v1: `str` / `repr` of tensors,
variables, shapes and dtypes, the `.name` of tensors, variables and ops, what shape methods
give (`as_list()`, `ndims`, `shape[i]`, `dims[i].value`), dtype attributes, the names
`global_variables()` lists, and the Python types `Session.run` returns.

Each program is built twice from one function, once with `tf.compat.v1` (in a `tf.Graph()`,
as tests/graph/tf_oracle.py builds: TF 2's resource variables and TensorShape) and once with
`dualgrad.graph`; every view of every object it returns is compared. `KNOWN` lists the views
where dualgrad keeps its own form on purpose, with the reason; such a row fails once the two
agree, so the table never outlives the difference.
"""
import numpy as np
import pytest

from dualgrad import graph as dg
from tests.graph.tf_oracle import load_tf


# -- the programs: each builds a graph with library L and returns (label, object) pairs --------
def placeholders(L):
    x = L.placeholder(L.float32, [None, 3], name="x")
    return [("x", x), ("scalar", L.placeholder(L.float32, [], name="s")),
            ("unknown rank", L.placeholder(L.float32, name="u")),
            ("unnamed", L.placeholder(L.int32, [2, 2])),
            ("unnamed again", L.placeholder(L.int64, [5])),
            ("bool", L.placeholder(L.bool, [4], name="mask")),
            ("float64 two unknown", L.placeholder(L.float64, [None, None], name="d")),
            ("uint8 image", L.placeholder(L.uint8, [None, 28, 28, 1], name="img"))]


def constants(L):
    return [("float", L.constant(1.0)), ("int list", L.constant([1, 2])),
            ("named", L.constant([[1.0]], name="c")), ("zeros", L.zeros([2, 3])),
            ("ones int32", L.ones([3], L.int32)), ("float16", L.constant(2.0, L.float16)),
            ("fill", L.fill([2], 7))]


def elementwise_and_reductions(L):
    x = L.placeholder(L.float32, [None, 3], name="x")
    w = L.placeholder(L.float32, [3, 4], name="w")
    h = L.matmul(x, w)
    return [("add", x + 1.0), ("add again", x + 2.0), ("sub", x - 1.0), ("mul", x * 2.0),
            ("truediv", x / 2.0), ("neg", -x), ("matmul", h), ("relu", L.nn.relu(h)),
            ("sigmoid", L.sigmoid(h)), ("tanh", L.tanh(h)), ("softmax", L.nn.softmax(h)),
            ("reduce_sum", L.reduce_sum(h)), ("reduce_mean axis", L.reduce_mean(h, axis=1)),
            ("argmax", L.argmax(h, 1)), ("equal", L.equal(h, h)), ("cast", L.cast(h, L.int32)),
            ("reshape", L.reshape(x, [-1])), ("transpose", L.transpose(w)),
            ("concat", L.concat([x, x], 1)), ("expand_dims", L.expand_dims(x, 0)),
            ("square", L.square(x)), ("exp", L.exp(x)), ("identity", L.identity(x, "same")),
            ("shape of", L.shape(x))]


def name_scopes(L):
    x = L.placeholder(L.float32, [2], name="x")
    with L.name_scope("layer"):
        a = x + 1.0
        with L.name_scope("inner"):
            b = a * 2.0
    with L.name_scope("layer"):
        c = x + 1.0
    with L.name_scope("layer/"):
        d = x + 3.0
    return [("in scope", a), ("nested", b), ("scope again", c), ("scope reentered", d),
            ("named in scope", L.identity(b, name="out"))]


def variables(L):
    v = L.Variable(L.zeros([3]), name="v")
    w = L.Variable(L.zeros([3]))
    w2 = L.Variable(np.ones((2, 2), np.float32))
    with L.name_scope("layer1"):
        k = L.Variable(L.zeros([3, 4]), name="kernel")
    step = L.Variable(0, name="step", trainable=False)
    scalar = L.Variable(1.5, name="scalar")
    x = L.placeholder(L.float32, [None, 3], name="x")
    return [("named", v), ("unnamed", w), ("unnamed again", w2), ("in name scope", k),
            ("int", step), ("scalar", scalar), ("plus placeholder", x + v),
            ("global_variables", L.global_variables()),
            ("trainable_variables", L.trainable_variables()),
            ("initializer", v.initializer), ("read", v.read_value())]


def get_variable_and_dense(L):
    x = L.placeholder(L.float32, [None, 3], name="x")
    with L.variable_scope("model"):
        w = L.get_variable("w", [3, 4])
        b = L.get_variable("b", [4], initializer=L.zeros_initializer())
    h = L.layers.dense(x, 4)
    h2 = L.layers.dense(h, 2, name="logits")
    h3 = L.layers.dense(h, 2)
    return [("get_variable", w), ("get_variable zeros", b), ("dense out", h),
            ("named dense out", h2), ("dense again", h3),
            ("global_variables", L.global_variables())]


def gradients(L):
    x = L.placeholder(L.float32, [None, 3], name="x")
    w = L.Variable(L.ones([3, 1]), name="w")
    loss = L.reduce_mean(L.square(L.matmul(x, w)))
    gw, gx = L.gradients(loss, [w, x])
    return [("loss", loss), ("grad of variable", gw), ("grad of placeholder", gx)]


def optimizer_slots(L):
    x = L.placeholder(L.float32, [None, 3], name="x")
    w = L.Variable(L.ones([3, 1]), name="w")
    b = L.Variable(L.zeros([1]), name="b")
    loss = L.reduce_mean(L.square(L.matmul(x, w) + b))
    adam = L.train.AdamOptimizer(0.1).minimize(loss)
    mom = L.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
    return [("adam train op", adam), ("momentum train op", mom),
            ("global_variables", L.global_variables()),
            ("trainable_variables", L.trainable_variables())]


PROGRAMS = {f.__name__: f for f in (placeholders, constants, elementwise_and_reductions,
                                     name_scopes, variables, get_variable_and_dense,
                                     gradients, optimizer_slots)}


# -- views: what a user prints or asks of each object -------------------------------------------
def _try(fn):
    try:
        return fn()
    except Exception as e:   # NOTE: both must refuse alike: compared by exception type
        return f"raises {type(e).__name__}"


def _shape_views(s, where):
    out = {f"{where} repr": _try(lambda: repr(s)), f"{where} str": _try(lambda: str(s)),
           f"{where}.as_list()": _try(lambda: s.as_list()), f"{where}.ndims": s.ndims}
    for i in range(s.ndims or 0):
        out[f"{where}[{i}]"] = _try(lambda: repr(s[i]))
        out[f"{where}.dims[{i}].value"] = _try(lambda: s.dims[i].value)
    return out


def _dtype_views(d):
    return {"dtype repr": repr(d), "dtype str": str(d), "dtype.name": d.name,
            "dtype.as_numpy_dtype": _try(lambda: repr(d.as_numpy_dtype)),
            "dtype.is_floating": _try(lambda: d.is_floating),
            "dtype.is_integer": _try(lambda: d.is_integer),
            "dtype.is_bool": _try(lambda: d.is_bool),
            "dtype.base_dtype": _try(lambda: repr(d.base_dtype))}


def views(L, obj):
    """{view: value} of one object; a list is its elements' names."""
    if isinstance(obj, list):
        return {"names": [t.name for t in obj]}
    if not hasattr(obj, "dtype"):   # an op
        return {"op repr": repr(obj), "op str": str(obj), "name": obj.name, "type": obj.type}
    out = {"repr": repr(obj), "str": str(obj), "name": obj.name}
    out.update(_shape_views(obj.shape, "shape"))
    out["get_shape() repr"] = repr(obj.get_shape())
    out.update(_dtype_views(obj.dtype))
    out["op.name"] = obj.op.name
    out["op.type"] = obj.op.type
    return out


def _build(L, program):
    g = L.Graph()
    with g.as_default():
        return [(label, views(L, obj)) for label, obj in PROGRAMS[program](L)]


@pytest.fixture(scope="module")
def tf1():
    return load_tf().compat.v1


@pytest.fixture(scope="module")
def built(tf1):
    return {p: (_build(tf1, p), _build(dg, p)) for p in PROGRAMS}


# -- known differences: (program or "*", label or "*", view) -> why ----------------------------
# NOTE: keyed as narrowly as the difference is; each row must still differ from TF.
OWN_OP_TYPES = "op types are dualgrad's own op names ('add'); TF's are its kernels' ('AddV2')"
UNKNOWN_DIM = ("an unknown dim is None, not TF's Dimension(None), so `.value` of it raises "
               "AttributeError (TF 2's shape[i] is None too; only TF's .dims keeps Dimensions)")
KNOWN = {
    ("*", "*", "op.type"): OWN_OP_TYPES,
    ("*", "*", "type"): OWN_OP_TYPES,
    ("*", "*", "op repr"): "an op prints as dualgrad's Node, with dualgrad's op type",
    ("*", "*", "op str"): "print(op) shows dualgrad's Node, not TF's NodeDef text",
}
NODE_NAMES = {}


def _known(program, label, view, want):
    if view.endswith(".value") and want is None:
        return UNKNOWN_DIM
    if label in NODE_NAMES.get(program, ()) and view in ("name", "op.name"):
        return "default node names follow dualgrad's ops, not TF's kernels"
    for key in ((program, label, view), (program, "*", view), ("*", label, view),
                ("*", "*", view)):
        if key in KNOWN:
            return KNOWN[key]
    return None


def _cases():
    tf1, out = load_tf().compat.v1, []
    for p in PROGRAMS:
        for label, vs in _build(tf1, p):
            out += [(p, label, v) for v in vs]
    return out


@pytest.mark.parametrize("program,label,view", _cases())
def test_prints_and_names_as_tf(built, program, label, view):
    want = dict(built[program][0])[label]
    got = dict(built[program][1])[label]
    why = _known(program, label, view, want[view])
    if why is not None:
        assert got.get(view) != want[view], f"known difference now agrees ({why}): remove it"
        return
    g = got.get(view, "(no such view)")
    if label in NODE_NAMES.get(program, ()) and view in ("repr", "str"):
        g = g.replace(got["name"], want["name"])
    assert g == want[view], f"{program} / {label} / {view}: dualgrad {g!r}, TF {want[view]!r}"


# -- what Session.run returns ---------------------------------------------------------------------
def _kind(value):
    """What a user sees of a fetched value: its type, dtype and shape (containers: each)."""
    if isinstance(value, dict):
        return {k: _kind(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_kind(v) for v in value])
    if value is None:
        return None
    return type(value).__name__, np.asarray(value).dtype.name, np.shape(value)


def _fetches(L):
    x = L.placeholder(L.float32, [None, 3], name="x")
    v = L.Variable(L.ones([3]), name="v")
    i = L.Variable(3, name="i")
    step = L.train.GradientDescentOptimizer(0.1).minimize(L.reduce_sum(x * v))
    return x, {
        "float scalar": L.reduce_sum(x), "float row": x[0] + v, "variable": v,
        "int variable": i, "int scalar": L.constant(2) * 3, "python float": L.constant(2.0),
        "bool scalar": L.reduce_all(x > 0), "argmax": L.argmax(x, 1), "shape": L.shape(x),
        "size": L.size(x), "float64": L.cast(x, L.float64), "indexed scalar": x[0, 1],
        "list": [v, i], "tuple": (L.reduce_max(x), L.shape(x)), "dict": {"a": v, "b": i},
        "train op": step, "initializer": v.initializer, "string": L.constant("ab"),
    }


def _run_kinds(L):
    g = L.Graph()
    with g.as_default():
        x, fetches = _fetches(L)
        with L.Session(graph=g) as s:
            s.run(L.global_variables_initializer())
            assert tuple(fetches) == FETCHES
            return {k: _kind(s.run(f, {x: np.ones((2, 3), np.float32)}))
                    for k, f in fetches.items()}


@pytest.fixture(scope="module")
def run_kinds(tf1):
    return _run_kinds(tf1), _run_kinds(dg)


FETCHES = ("float scalar", "float row", "variable", "int variable", "int scalar", "python float",
           "bool scalar", "argmax", "shape", "size", "float64", "indexed scalar", "list",
           "tuple", "dict", "train op", "initializer", "string")


@pytest.mark.parametrize("fetch", FETCHES)
def test_session_run_returns_what_tf_returns(run_kinds, fetch):
    want, got = run_kinds[0][fetch], run_kinds[1][fetch]
    assert got == want, f"{fetch}: dualgrad {got}, TF {want}"


# -- the dtype objects themselves ------------------------------------------------------------------
DTYPE_NAMES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
               "bool", "string")


def _dtype_object_views(L, name):
    d = getattr(L, name)
    out = _dtype_views(d)
    out.update({"as_dtype(name)": repr(L.as_dtype(name)), "is_unsigned": d.is_unsigned,
                "size": _try(lambda: d.size), "min": _try(lambda: d.min),
                "max": _try(lambda: d.max), "== its numpy type": d == d.as_numpy_dtype,
                "== float32": d == L.float32, "== 'float32'": d == "float32",
                "is as_dtype(itself)": L.as_dtype(d) is d,
                "as_datatype_enum": _try(lambda: d.as_datatype_enum),
                "== None": d == None,  # noqa: E711 - what `dtype == None` gives
                "make_tensor_proto(dtype=)": _try(lambda: L.make_tensor_proto(
                    [b"a"] if name == "string" else [True] if name == "bool" else [1],
                    dtype=d).dtype)})
    return out


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dtype_objects_are_tfs(tf1, name):
    assert _dtype_object_views(dg, name) == _dtype_object_views(tf1, name)


# -- a variable's name is 'v:0', its checkpoint key 'v' -------------------------------------------
def _saved_keys(L, train, tmp_path):
    tmp_path.mkdir()
    g = L.Graph()
    with g.as_default():
        v = L.Variable(L.zeros([3]), name="v")
        with L.variable_scope("model"):
            L.get_variable("w", [2, 2])
        L.layers.dense(L.placeholder(L.float32, [None, 2]), 3)
        L.train.AdamOptimizer(0.1).minimize(L.reduce_sum(v))
        names = [x.name for x in L.global_variables()]
        with L.Session(graph=g) as s:
            s.run(L.global_variables_initializer())
            prefix = L.train.Saver().save(s, str(tmp_path / "model.ckpt"))
    return names, [k for k, _ in train.list_variables(prefix)]


def test_checkpoint_keys_are_tfs_without_the_output_index(tf1, tmp_path):
    tf = load_tf()
    want = _saved_keys(tf1, tf.train, tmp_path / "tf")
    got = _saved_keys(dg, dg.train, tmp_path / "dg")
    assert "v:0" in want[0] and "v" in want[1]
    assert got == want

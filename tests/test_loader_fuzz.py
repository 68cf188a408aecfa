"""Every loader, fed mutated valid files, raises only its documented error (naming the file)
or loads; never another exception, never more than MEMORY_LIMIT of new address space, and
the valid file still loads after.

Loaders and their errors: eager.load -> ValueError; graph.load, compiler.load_exported ->
GraphFileError; train.Saver.restore -> GraphFileError / NotFoundError; graph.onnx.load ->
OnnxError; ops.files.read_safetensors (the safetensors reader under all of them) ->
SafetensorError / UnreadableWeights / ValueError; GraphDef.FromString + import_graph_def of
a frozen `.pb` -> DecodeError / GraphDefError (they cannot name the file: the user reads it). FileNotFoundError is never expected here.

Mutations: truncation, bit flips, overwritten bytes, a huge or tiny header length, and
structural edits of the JSON (the graph file, the safetensors header, eager's tree): a value
at a random path replaced with a huge number, a wrong type, a 2000-deep nesting, a huge
shape or offset, deleted, or a tensor name made to collide with another.

Budget: EXAMPLES examples per loader (default 150, env DUALGRAD_FUZZ_EXAMPLES): each load of
these small files takes a few ms, so the module runs in about 5 s on one core; the seed is random per run and printed (re-run one with
DUALGRAD_FUZZ_SEED=...). The memory limit is RLIMIT_AS, set for the duration of each load to
the process's current size + MEMORY_LIMIT (Linux).
"""
from __future__ import annotations

import contextlib
import json
import os
import random
import resource
import struct
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, seed, settings
from hypothesis import strategies as st

from dualgrad import compiler, eager, graph
from dualgrad.graph.errors import GraphFileError, NotFoundError
from dualgrad.graph.graph_def_import import GraphDefError
from dualgrad.graph.protobuf import DecodeError
from dualgrad.ops import files

pytestmark = pytest.mark.usefixtures("hang_guard")

SEED = int(os.environ.get("DUALGRAD_FUZZ_SEED") or random.SystemRandom().randrange(2 ** 32))
EXAMPLES = int(os.environ.get("DUALGRAD_FUZZ_EXAMPLES", "150"))
MEMORY_LIMIT = 1 << 30
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))
print(f"loader fuzz seed: DUALGRAD_FUZZ_SEED={SEED}")


def _vm_size():
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmSize:"))


@contextlib.contextmanager
def memory_cap(extra=MEMORY_LIMIT):
    """At most `extra` bytes of new address space while the block runs (RLIMIT_AS)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = _vm_size() + extra
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard < 0 else min(cap, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


# -- mutations --------------------------------------------------------------------------------
HUGE = [2 ** 63, 2 ** 64 + 1, -1, -(2 ** 63), 10 ** 30, 2 ** 40, 2 ** 31, 0]
WEIRD = st.one_of(st.sampled_from(HUGE), st.none(), st.booleans(), st.text(max_size=8),
                  st.floats(allow_nan=True), st.just([]), st.just({}),
                  st.just([[2 ** 40] * 3]), st.just("[" * 2000),
                  st.lists(st.sampled_from(HUGE), max_size=4),
                  st.builds(lambda n: _nest(n), st.integers(50, 2000)))


def _nest(depth):
    out = 0
    for _ in range(depth):
        out = [out]
    return out


def _paths(doc, prefix=(), out=None, limit=400):
    out = [] if out is None else out
    if len(out) < limit:
        out.append(prefix)
        items = doc.items() if isinstance(doc, dict) else \
            enumerate(doc) if isinstance(doc, list) else ()
        for k, v in items:
            _paths(v, prefix + (k,), out, limit)
    return out


@st.composite
def json_edit(draw, doc):
    """A copy of doc with one value replaced, deleted, or a dict key renamed to a sibling's."""
    doc = json.loads(json.dumps(doc))
    path = draw(st.sampled_from(_paths(doc)[1:]))
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    action = draw(st.sampled_from(["replace", "delete", "collide"]))
    if action == "delete":
        del parent[path[-1]]
    elif action == "collide" and isinstance(parent, dict) and len(parent) > 1:
        other = draw(st.sampled_from([k for k in parent if k != path[-1]]))
        parent[path[-1]] = parent[other]
        parent[other + "\u0000"] = parent.pop(other)      # two names, one tensor's data
    else:
        parent[path[-1]] = draw(WEIRD)
    return doc


def _safetensors_parts(data):
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n]), data[8 + n:]


def _safetensors_join(header, body):
    raw = json.dumps(header, allow_nan=True).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + body


@st.composite
def mutate(draw, name, data):
    """One mutation of file `name` whose valid content is `data`; a nesting too deep for
    this process's recursion limit to encode (TF, once imported, raises the limit from 1000
    to 3000, so it depends on the tests run before) is rejected, not an error."""
    try:
        return draw(_mutate(name, data))
    except RecursionError:
        reject()


@st.composite
def _mutate(draw, name, data):
    kinds = ["truncate", "flip", "overwrite"]
    if name.endswith(".json"):
        kinds.append("json")
    if name.endswith((".safetensors", ".pt")):
        kinds += ["header", "header", "length"]
    kind = draw(st.sampled_from(kinds))
    if kind == "truncate":
        return data[:draw(st.integers(0, len(data) - 1))]
    if kind == "flip":
        out = bytearray(data)
        for pos, bit in draw(st.lists(st.tuples(st.integers(0, len(data) - 1),
                                                st.integers(0, 7)), min_size=1, max_size=8)):
            out[pos] ^= 1 << bit
        return bytes(out)
    if kind == "overwrite":
        pos = draw(st.integers(0, len(data) - 1))
        return data[:pos] + draw(st.binary(min_size=1, max_size=16)) + data[pos + 16:]
    if kind == "json":
        return json.dumps(draw(json_edit(json.loads(data)))).encode()
    if kind == "length":
        return struct.pack("<Q", draw(st.sampled_from([0, 1, 7, 2 ** 27, 2 ** 63, 2 ** 64 - 1,
                                                       len(data)]))) + data[8:]
    header, body = _safetensors_parts(data)
    meta = header.get("__metadata__", {})
    if "tree" in meta and draw(st.booleans()):           # eager's nested structure
        meta["tree"] = json.dumps(draw(json_edit(json.loads(meta["tree"]))))
        return _safetensors_join(header, body)
    return _safetensors_join(draw(json_edit(header)), body)


# -- the loaders and their valid files ----------------------------------------------------------
def _eager_files(folder):
    model = eager.nn.Linear(3, 2)
    opt = eager.optim.Adam(model.parameters())
    model(eager.ones(1, 3)).sum().backward()
    opt.step()
    eager.save({"epoch": 3, "model": model.state_dict(), "opt": opt.state_dict(),
                "misc": [1.5, "x", None, (2, 3)]}, os.path.join(folder, "c.pt"))
    eager.save(model.state_dict(), os.path.join(folder, "flat.safetensors"))


def _graph(value=1.0):
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(graph.float32, (None, 3), name="x")
        w = graph.Variable(np.full((3, 2), value, np.float32), name="w")
        graph.nn.relu(graph.matmul(x, w) + graph.constant([0.5, -0.5]), name="y")
        init = graph.global_variables_initializer()
    return g, init


def _graph_files(folder):
    g, init = _graph()
    with graph.Session(g) as s:
        s.run(init)
        graph.save(os.path.join(folder, "m"), s)
        graph.train.Saver().save(s, os.path.join(folder, "ckpt"))
    ep = compiler.export(eager.nn.Sequential(eager.nn.Linear(3, 4), eager.nn.Tanh()),
                         (eager.ones(2, 3),))
    ep.save(os.path.join(folder, "prog"))


def _onnx_files(folder):
    pytest.importorskip("onnx")
    ep = compiler.export(eager.nn.Sequential(eager.nn.Linear(3, 4), eager.nn.Tanh()),
                         (eager.ones(2, 3),))
    ep.to_onnx(os.path.join(folder, "m.onnx"))


def _graphdef_files(folder):
    g, init = _graph()
    with g.as_default():
        c = graph.nn.conv2d(graph.placeholder(graph.float32, (None, 4, 4, 1), name="img"),
                            np.ones((2, 2, 1, 2), np.float32), [1, 1, 1, 1], "SAME")
        graph.reduce_mean(c, axis=[1, 2], name="pooled")
    with graph.Session(g) as s:
        s.run(init)
        frozen = graph.graph_util.convert_variables_to_constants(s, g.as_graph_def(),
                                                                 ["y", "pooled"])
    graph.train.write_graph(frozen, folder, "frozen.pb", as_text=False)


def _import_pb(path):
    with open(path, "rb") as f:
        gd = graph.GraphDef.FromString(f.read())
    with graph.Graph().as_default():
        graph.import_graph_def(gd, name="")


def _restore(prefix):
    g, init = _graph(0.0)
    with graph.Session(g) as s:
        graph.train.Saver().restore(s, prefix)


def _read(path):
    files.read_safetensors(path)


def _onnx_load(path):
    from dualgrad.graph import onnx as gonnx
    gonnx.load(path)


def _onnx_error():
    from dualgrad.graph.onnx.to_onnx import OnnxError
    return (OnnxError,)


try:
    from safetensors import SafetensorError
except ImportError:                          # pragma: no cover - a core dependency
    SafetensorError = ValueError

# name: (make files, mutated file, load(path of first file), the errors it may raise)
LOADERS = {
    "eager.load tree": (_eager_files, "c.pt", "c.pt", eager.load, (ValueError,)),
    "eager.load flat": (_eager_files, "flat.safetensors", "flat.safetensors", eager.load,
                        (ValueError,)),
    "graph.load json": (_graph_files, "m.json", "m", graph.load, (GraphFileError,)),
    "graph.load weights": (_graph_files, "m.safetensors", "m", graph.load, (GraphFileError,)),
    "load_exported": (_graph_files, "prog.json", "prog", compiler.load_exported,
                      (GraphFileError,)),
    "Saver.restore": (_graph_files, "ckpt.safetensors", "ckpt", _restore,
                      (GraphFileError, NotFoundError)),
    "read_safetensors": (_eager_files, "flat.safetensors", "flat.safetensors", _read,
                         (SafetensorError, files.UnreadableWeights, ValueError)),
    "graph.onnx.load": (_onnx_files, "m.onnx", "m.onnx", _onnx_load, None),
    "import_graph_def": (_graphdef_files, "frozen.pb", "frozen.pb", _import_pb,
                         (DecodeError, GraphDefError)),
}


@pytest.fixture(scope="module")
def valid_files(tmp_path_factory):
    made = {}
    for name, (make, *_rest) in LOADERS.items():
        if make not in made:
            folder = str(tmp_path_factory.mktemp(make.__name__))
            make(folder)
            made[make] = folder
    return made


@pytest.mark.parametrize("loader", list(LOADERS))
def test_loader_raises_only_its_own_error_on_mutated_files(loader, valid_files):
    make, target, arg, load, errors = LOADERS[loader]
    errors = errors or _onnx_error()
    folder = valid_files[make]
    with open(os.path.join(folder, target), "rb") as f:
        data = f.read()
    print(f"{loader}: seed {SEED}, {EXAMPLES} examples")
    outcomes = {}

    @seed(SEED)
    @SETTINGS
    @given(st.data())
    def run(draw):
        bad = draw.draw(mutate(target, data), label="mutated file")
        with tempfile.TemporaryDirectory() as tmp:
            for name in os.listdir(folder):
                with open(os.path.join(folder, name), "rb") as f:
                    content = f.read()
                with open(os.path.join(tmp, name), "wb") as f:
                    f.write(bad if name == target else content)
            path = os.path.join(tmp, arg)
            outcome = "loaded"
            try:
                with memory_cap():
                    load(path)
            except errors as e:
                outcome = type(e).__name__
                # NOTE: import_graph_def reads a GraphDef the user parsed from bytes they read
                assert tmp in str(e) or loader in ("read_safetensors", "Saver.restore",
                                                   "import_graph_def"), \
                    f"{type(e).__name__} does not name the file: {e}"
            outcomes[outcome] = outcomes.get(outcome, 0) + 1

    run()
    print(f"{loader}: outcomes {outcomes}")
    load(os.path.join(folder, arg))           # the valid file still loads

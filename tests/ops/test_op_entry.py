"""The op entry is the whole op: what the optimiser and the exporters need to know about an op
is a field of its `Op` (checked here against the op's own kernel on its samples), and no other
package keeps a table keyed by op names.

Cost: one kernel call per sample and field (the registry's ~400 samples), under 2 s.
"""
import ast
import pathlib

import numpy as np
import pytest

from dualgrad import ops
from dualgrad.graph.core import GRAPH_OPS
from tests.opinfo import params

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Module-level tables keyed by op names that are not per-op facts kept outside the entry;
# each row has its reason. A row whose table is gone fails the test, so this only shrinks.
KNOWN_TABLES = {
    ("ops/scalar.py", "FUNCTIONS"): "the scalar vocabulary's functions; their names match ops'",
    ("ops/special_math.py", "_POLYS"): "the polynomials' registration table, beside their entries",
    ("graph/inspect.py", "_STYLE"): "how to draw graph-only node kinds in DOT, not op facts",
    ("graph/onnx/rules_math.py", "_PY"): "the ONNX reader's shape arithmetic in Python",
    ("graph/onnx/to_onnx.py", "RULES"): "the ONNX writer's rules take its Writer, which ops/ "
                                        "does not import; an op's one-to-one form is `Op.onnx`",
    ("graph/graph_def_export.py", "WRITERS"): "TF GraphDef writers take their Writer and write "
                                              "several nodes or attributes; an op's one-op "
                                              "form is `Op.tf`",
}


def _ok_cases(pred):
    return params("ok", lambda c: c.name in ops.REGISTRY and pred(ops.REGISTRY[c.name]))


def _run(case, args):
    return np.asarray(ops.REGISTRY[case.name].kernel(*args, **case.sample.attrs))


def test_public_function_is_the_entrys():
    """`ops.reshape` is `REGISTRY["reshape"].fn`: the generated tests call what users call."""
    differ = [n for n, op in ops.REGISTRY.items() if getattr(ops, n, op.fn) is not op.fn]
    assert not differ, f"ops.<name> is not the entry's fn for {differ}"
    assert all(op.fn is not None for op in ops.REGISTRY.values())


@pytest.mark.parametrize("case", _ok_cases(lambda op: op.shape_only_from is not None))
def test_shape_only_inputs_are_read_for_their_spec(case):
    args = case.args(np.float64)
    k = ops.REGISTRY[case.name].shape_only_from
    other = [np.full_like(a, 7.0) if i >= k and isinstance(a, np.ndarray) else a
             for i, a in enumerate(args)]
    np.testing.assert_array_equal(_run(case, args), _run(case, other))


@pytest.mark.parametrize("case", _ok_cases(lambda op: op.zero_from))
def test_zero_inputs_give_zeros(case):
    for k in ops.REGISTRY[case.name].zero_from:
        args = case.args(np.float64)
        args[k] = np.zeros_like(args[k])
        assert not np.any(_run(case, args)), f"{case.id}: input {k} zero, result not all zeros"


@pytest.mark.parametrize("case", params("ok", lambda c: c.name in ops.REGISTRY))
def test_a_kernel_that_returns_its_input_says_so(case):
    """Buffer planning reuses a dead intermediate's memory unless the op declares `may_alias`."""
    args = case.args(np.float64)
    out = ops.REGISTRY[case.name].kernel(*args, **case.sample.attrs)
    outs = out if isinstance(out, tuple) else (out,)
    shares = any(isinstance(o, np.ndarray) and isinstance(a, np.ndarray)
                 and np.shares_memory(o, a) for o in outs for a in args)
    assert not shares or ops.REGISTRY[case.name].may_alias, f"{case.name} aliases its input"


@pytest.mark.parametrize("case", _ok_cases(lambda op: op.inference_identity))
def test_inference_identity_returns_its_input(case):
    args = case.args(np.float64)
    np.testing.assert_array_equal(_run(case, args), args[0])


def _op_name_tables(names):
    for pkg in ("ops", "eager", "graph", "compiler", "comparisons"):
        for f in sorted((ROOT / pkg).rglob("*.py")):
            for node in ast.parse(f.read_text()).body:
                keys = _literal_keys(node)
                if len(keys) >= 2 and sum(k in names for k in keys) >= 0.8 * len(keys):
                    target = ast.unparse(node.targets[0] if isinstance(node, ast.Assign)
                                         else node.target)
                    if target != "__all__":     # NOTE: a module's exports, not op facts
                        yield str(f.relative_to(ROOT)), target


def _literal_keys(node):
    if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
        return []
    v = node.value
    elts = [k for k in v.keys if k is not None] if isinstance(v, ast.Dict) else \
        v.elts if isinstance(v, (ast.Set, ast.Tuple, ast.List)) else []
    strs = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return strs if len(strs) == len(elts) else []


def test_no_side_tables_of_op_facts():
    found = set(_op_name_tables(set(ops.REGISTRY) | set(GRAPH_OPS)))
    new = sorted(found - set(KNOWN_TABLES))
    assert not new, f"tables keyed by op names outside the entries (make them Op fields): {new}"
    gone = sorted(set(KNOWN_TABLES) - found)
    assert not gone, f"KNOWN_TABLES rows whose table is gone (delete the rows): {gone}"

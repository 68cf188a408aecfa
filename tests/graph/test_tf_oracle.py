"""Real tf.compat.v1 as the oracle of dualgrad.graph: every op name, every dtype TF takes.

For each row of `tf_oracle_table.ROWS` (every public op name of `dualgrad.graph` and its
namespaces, or an exclusion with its reason in `EXCLUDED`) and each of the nine dtypes
bool, uint8, int8, int16, int32, int64, float16, float32, float64, one random sample (a
fixed seed) runs in TF and in dualgrad, unoptimised and optimised (`tf_oracle.run_case`).
TF decides which dtypes the op accepts; where it refuses, dualgrad must refuse too. A case
that still differs is a row of `KNOWN` with its reason; the test fails when such a case
starts to agree, so the table cannot go stale.

Cap: one sample per (row, dtype), shapes of at most 50 elements, 9 dtypes: about 1,600
cases, each one TF graph and one dualgrad graph run twice; the rows are chosen to cover each
name once or twice (argument variants that take other code paths), not exhaustively. TF is
imported once per process with one thread per pool. docs/tf1-compat.md shows the generated
tables; `python -m tests.graph.tf_oracle_docs` rewrites them.
"""
import pytest

pytest.importorskip("tensorflow")

from . import tf_oracle as O  # noqa: E402
from . import tf_oracle_docs as D  # noqa: E402
from .tf_oracle_table import EXCLUDED, ROWS, is_op, public_names  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _tf():
    O.load_tf()


@pytest.mark.parametrize("row", ROWS, ids=D.row_ids())
def test_agrees_with_tf(row):
    bad, fixed = [], []
    for dt in row.dtypes:
        r = D.result(row, dt)
        column, why = D.known(row, dt) or (None, None)
        differs = (r.unopt or r.opt) if column != "optimised" else r.opt
        if column and not differs:
            fixed.append(f"{dt}: agrees now; remove its KNOWN entry ({why})")
        elif (r.unopt if column == "optimised" else not column and (r.unopt or r.opt)):
            bad.append(f"{dt}: unoptimised: {r.unopt or 'agrees'}; optimised: {r.opt or 'agrees'}")
    assert not bad + fixed, "\n".join(bad + fixed)


def test_every_op_name_has_a_row_or_a_reason():
    names = public_names()
    covered = {r.name for r in ROWS}
    assert covered <= set(names), covered - set(names)
    same = {id(names[n]) for n in covered}
    missing = [n for n, o in names.items()
               if is_op(o) and n not in covered and id(o) not in same and n not in EXCLUDED]
    assert not missing, f"no row and no exclusion for {missing}"
    stale = [n for n in EXCLUDED if n not in names or n in covered]
    assert not stale, f"exclusions for names that are covered or gone: {stale}"


def test_tf_has_every_name_compared():
    tf1 = O.load_tf().compat.v1
    absent = [r.tf_name for r in ROWS if not _has(tf1, r.tf_name)]
    assert not absent, absent
    for alias in D.aliases():
        assert _has(tf1, alias) or alias in D.NO_TF_ALIAS, f"tf.compat.v1 has no {alias}"


def _has(module, path):
    try:
        O.resolve(module, path)
        return True
    except AttributeError:
        return False


def test_docs_show_the_generated_tables():
    text = open(D.DOC).read()
    assert D.block(text) == D.generate(), \
        "docs/tf1-compat.md is out of date: run `python -m tests.graph.tf_oracle_docs`"


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
def test_integer_euclidean_norm_wraps_and_truncates_as_tf(dtype):
    """Integer squares that overflow their dtype wrap, and a negative wrapped sum gives 0, as
    TF's kernel (the oracle rows' small inputs never overflow)."""
    import numpy as np

    from dualgrad import graph as dg
    tf = O.load_tf()
    big = {"int8": [[100, 100, 100], [10, 5, 2]], "uint8": [[200, 200], [10, 20]],
           "int32": [[46341, 46341], [3, 4]], "int64": [[3000000000, 4000000000], [1, 2]]}
    x = np.array(big[dtype], dtype)
    want = tf.compat.v1.math.reduce_euclidean_norm(x, axis=1).numpy()
    g = dg.Graph()
    with g.as_default():
        p = dg.placeholder(dtype, x.shape)
        y = dg.math.reduce_euclidean_norm(p, axis=1)
        for optimize in (False, True):
            with dg.Session(optimize=optimize) as s:
                got = s.run(y, {p: x})
            assert got.dtype == want.dtype and np.array_equal(got, want), (optimize, got, want)

"""Each graph test starts with a fresh default graph (TF1 tests do the same)."""
import pytest

from dualgrad import graph


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    graph.reset_default_graph()
    yield

"""Fixtures every test folder may use: `hang_guard` (tests/hang_guard.py)."""
from .hang_guard import hang_guard  # noqa: F401  (a fixture, found by name)


def pytest_configure(config):
    config.addinivalue_line("markers", "hang_guard(seconds): fail the test with every thread's "
                                       "stack when it runs longer (needs the hang_guard fixture)")

"""Fixtures shared by the whole suite (browser fixtures live in tests/browser/conftest.py)."""

import pytest

from attnlab.io.threads import one_thread as _one_thread


@pytest.fixture(scope="module")
def one_thread():
    """Run a module's tiny models on one CPU thread, as the lab itself does (attnlab.io.threads)."""
    with _one_thread():
        yield

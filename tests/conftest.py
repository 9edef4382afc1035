"""Fixtures shared by the whole suite (browser fixtures live in tests/browser/conftest.py)."""

import os

import pytest

from attnlab.io.threads import one_thread as _one_thread


def pytest_configure(config):
    """Lesson results are kept on disk by the lab (lessons/common/disk_cache.py); in the suite they are kept in
    memory only, as each test's lab did before, so that a test that patches a lesson (a null test, a held
    training) can never leave its result for another test to read, nor read the user's own cache. The processes
    a test starts inherit this; tests/test_lesson_cache.py points the cache at folders of its own."""
    os.environ["ATTNLAB_CACHE"] = "off"
    os.environ["ATTNLAB_WARM"] = "0"  # a lab a test starts does not compute every page behind the test's back


@pytest.fixture(scope="module")
def one_thread():
    """Run a module's tiny models on one CPU thread, as the lab itself does (attnlab.io.threads)."""
    with _one_thread():
        yield

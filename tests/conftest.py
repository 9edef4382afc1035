"""Fixtures shared by the whole suite (the browser fixtures are the plugin tests/browser_fixtures.py).

The suite's one result store: a lesson's result is computed once per (topic, settings, language, code version)
and shared by every test and both xdist workers. It is the lab's own disk cache (lessons/common/disk_cache.py),
pointed at one fresh folder for the run, which the workers and every process a test starts inherit. What reads
it: the web (a TestClient's or a browser test's lab), `attnlab explain`, and tests/results.py's `result()`.

A test that patches something (it asks for `monkeypatch`, or is marked `fresh`) runs with the cache off: a null
test's patched lesson, a held training or a cancelled one can never leave its result for another test, nor read
one. Tests that must compute afresh for another reason (determinism, the cache's own behaviour, a first visit's
progress) say so with `@pytest.mark.fresh` or point the cache at folders of their own."""

import os
import shutil
import tempfile

import pytest

from attnlab.io.threads import one_thread as _one_thread

pytest_plugins = ["browser_fixtures"]  # the real-browser fixtures, for tests/browser/ and a lesson's page tests

STORE_ENV = "ATTNLAB_TEST_STORE"  # the run's folder, made by the first process (xdist's controller)


def pytest_configure(config):
    config.addinivalue_line("markers", "fresh: computes lessons afresh (the shared result store is off)")
    if not os.environ.get(STORE_ENV):  # the controller (or a run without xdist): the workers inherit it
        os.environ[STORE_ENV] = tempfile.mkdtemp(prefix="attnlab-results-")
        config._attnlab_store_owner = True
    os.environ["ATTNLAB_CACHE"] = os.environ[STORE_ENV]
    # One CPU thread a process: xdist runs a worker per core, and two threads a worker would make four that
    # spin-wait for each other on two cores (a trained lesson measured four times slower). Processes a test
    # starts inherit it; a test about threads sets its own count.
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)
    os.environ["ATTNLAB_WARM"] = "0"  # a lab a test starts does not compute every page behind the test's back


def pytest_unconfigure(config):
    if getattr(config, "_attnlab_store_owner", False):
        shutil.rmtree(os.environ.pop(STORE_ENV), ignore_errors=True)


@pytest.fixture(autouse=True)
def _fresh_when_patched(request):
    """The shared store is off for a test that patches (monkeypatch) or says it must compute afresh (fresh)."""
    if "monkeypatch" not in request.fixturenames and request.node.get_closest_marker("fresh") is None:
        yield
        return
    from attnlab.lessons.common import disk_cache

    with disk_cache.using(None):
        yield


@pytest.fixture(scope="module")
def one_thread():
    """Run a module's tiny models on one CPU thread, as the lab itself does (attnlab.io.threads)."""
    with _one_thread():
        yield

"""The site `attnlab export-site DIR` writes with its defaults (both languages, every state a learner clicks to,
the poem model trained for /pipeline), made once per test run and shared by every test of the export
(tests/test_export_site.py, tests/test_export_states.py and their browser tests), even on two xdist workers:
the second file to ask waits for the first's export instead of making its own. An export is atomic: a folder
that is there is complete. What the report says that the folder does not (the trained run's id, which the
live lab of the exporting process knows) is written beside it.

The export reads and fills the suite's shared result store (tests/conftest.py), like a lab restarted on the same
cache folder: a heavy lesson's defaults that another test computed (the claims rule's, say) are read, not
trained again, and the live lab tests/test_export_site.py compares the copy with reads what the export computed."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

from attnlab.lessons.common import disk_cache
from attnlab.web.export import site as export


def _base(tmp_path_factory) -> Path:
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # .../pytest-N/popen-gwK: the run's folder is shared by the workers
        base = base.parent
    return base


def lesson_cache() -> Path:
    """The suite's store (tests/conftest.py), the lab's disk cache in every process of the run."""
    return Path(os.environ["ATTNLAB_TEST_STORE"])


def _heavy_defaults() -> None:
    """Each heavy lesson at its defaults and its claims' nulls, in both languages, through the suite's store
    (results.explained): both languages are computed under one lock, so a test of the other worker that asks for
    one of them at the same moment waits and reads it, and the models are trained once for the two (the page's
    own path computes without waiting for another process)."""
    from results import explained

    from attnlab.lessons.explain import TOPICS

    for name, topic in TOPICS.items():
        if topic.heavy:
            explained(name, "zh")


def exported_site(tmp_path_factory) -> Path:
    base = _base(tmp_path_factory)
    site = base / "attnlab-site-both"
    with open(base / "attnlab-site-both.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker exports; the other waits, then finds the folder
        if not site.exists():
            with disk_cache.using(lesson_cache()):  # even under a test that turned the store off
                _heavy_defaults()
                report = export.export_site(site)  # the command's defaults: no reduced stand-in
            trained = vars(report.trained) | {"pid": os.getpid()}
            (base / "attnlab-site-both.json").write_text(json.dumps({"trained": trained}), encoding="utf-8")
    return site


def export_report(tmp_path_factory) -> dict:
    """{'trained': {'run', 'corpus', 'seed', 'steps', 'prompt', 'pid'}} of the shared export (pid: the process
    whose live lab holds that run)."""
    exported_site(tmp_path_factory)
    return json.loads((_base(tmp_path_factory) / "attnlab-site-both.json").read_text(encoding="utf-8"))

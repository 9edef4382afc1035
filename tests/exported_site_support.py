"""The exported site with both languages, made once per test run and shared by tests/test_export_site.py and
tests/browser/test_exported_site.py, even on two xdist workers: an export computes every lesson at its
defaults (about two minutes on 2 cores), so the second file to ask waits for the first's export instead of
making its own. An export is atomic: a folder that is there is complete."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from attnlab.web.export import site as export


def exported_site(tmp_path_factory) -> Path:
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # .../pytest-N/popen-gwK: the run's folder is shared by the workers
        base = base.parent
    site = base / "attnlab-site-both"
    with open(base / "attnlab-site-both.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker exports; the other waits, then finds the folder
        if not site.exists():  # the states a learner clicks to: tests/test_export_states.py (a smaller site)
            export.export_site(site, states=False)
    return site

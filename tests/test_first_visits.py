"""Issue 22, item 8: after the lab has run once, a page's first visit in a fresh process finds what it needs on
disk. These check the causes the benchmark (benchmarks/bench_first_visit.py) found, not times (tests never
assert wall-clock times):

- /pipeline sized its model on the meta device, and its first update made torch's first optimizer: both import
  torch._dynamo (1.5 to 2.7 s on a 2-core machine). Now the default page imports neither, once the update is kept.
- /real's three parts were kept on disk only when one took 0.2 s: in a process only the first part loads the
  model, so the quick others were computed again after every restart. Each is kept now, however quick.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections import OrderedDict

import pytest
from fastapi.testclient import TestClient

from attnlab.lessons.common import disk_cache
from attnlab.web import lesson_cache
from attnlab.web.app import create_app

pytestmark = pytest.mark.slow  # starts processes

NEVER_S = 120  # a bound on waits for events that come at once on any machine

SCRIPT = """
import sys
import threading
from fastapi.testclient import TestClient
from attnlab.web.app import create_app

page = TestClient(create_app()).get("/pipeline?lang=zh", headers={"Accept": "text/html"})
assert page.status_code == 200, page.status_code
assert "静夜思" in page.text or "床前明月光" in page.text
for thread in threading.enumerate():
    if thread.name == "attnlab-store":  # what the page keeps on disk is written on another thread
        thread.join()
print("dynamo" if "torch._dynamo" in sys.modules else "no dynamo")
"""


def first_visit(cache) -> str:
    env = {**os.environ, "ATTNLAB_CACHE": str(cache), "ATTNLAB_WARM": "0"}
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_pipeline_first_visit_does_not_import_dynamo(tmp_path):
    first = first_visit(tmp_path / "cache")  # the lab's first run: the first update is computed, and kept
    assert first == "dynamo"  # the control: computing it does import torch._dynamo (else this test shows nothing)
    assert first_visit(tmp_path / "cache") == "no dynamo"  # run again: the page reads it from the disk cache


def test_every_part_of_a_first_visit_is_kept_however_quick(tmp_path, monkeypatch):
    kept, all_kept, real_store = [], threading.Event(), disk_cache.store
    wanted = {"real.analyse", "real.coreference", "real.embeddings", "pipeline.first-step"}

    def store(key, result, *where):
        done = real_store(key, result, *where)
        kept.append(key["name"])
        if wanted <= set(kept):
            all_kept.set()
        return done

    monkeypatch.setattr(disk_cache, "store", store)
    monkeypatch.setattr(lesson_cache, "_cache", OrderedDict())  # what earlier tests of this process kept: a restart
    disk_cache.use(tmp_path / "cache")
    try:
        with TestClient(create_app()) as client:
            for path in ("/real", "/real", "/pipeline"):  # the second /real: every part quick, the model loaded
                assert client.get(path, headers={"Accept": "text/html"}).status_code == 200
            all_kept.wait(NEVER_S)  # written on another thread, after the page was answered
    finally:
        disk_cache.use()
    assert wanted <= set(kept), kept
    assert sorted(p.parent.name for p in (tmp_path / "cache" / "results").glob("*/*.json")) == sorted(
        ["page-pipeline-first-step", "page-real-analyse", "page-real-coreference", "page-real-embeddings"]
    )

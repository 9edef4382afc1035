"""/scale and GET /api/scale/sweeps (issue 24, item 3; attnlab.web.sweeps): the corpora of `serve --data` offered by
name and never a path from a request, finished sweeps read from the runs folder with their command, and a small sweep
started from the page, followed while it runs and listed when done. The sweep itself
(attnlab.lessons.scale.sweep.run_sweep) is replaced here by one that waits for the test and writes a scale.json: the
real sweep is tests/test_scale_sweep.py."""

from __future__ import annotations

import json
import threading

import pytest
from fastapi.testclient import TestClient

from attnlab.lessons.scale import sweep as sweep_module
from attnlab.web import sweeps
from attnlab.web.app import create_app

pytestmark = pytest.mark.slow  # trains models

SCALE_JSON = {
    "corpus": "poems",
    "runs": [{"n_params": 3312, "tokens": 1000, "flops": 1e9, "val_loss": 5.3}],
    "fit": {
        "alpha": 0.05,
        "beta": 0.15,
        "alpha_interval": [0.02, 0.14],
        "beta_interval": [0.07, 0.4],
        "shown": True,
        "reason": "shown",
    },
    "optimum": [],
    "mlp_baseline": [],
    "emergence": {"rows": [], "shapes": {}},
    "command": "attnlab scale --corpus poems --out runs/done --minutes 15",
}


@pytest.fixture
def lab(tmp_path):
    data, runs = tmp_path / "data", tmp_path / "runs"
    (data / "tang").mkdir(parents=True)
    (data / "notes.txt").write_text("abc " * 100, encoding="utf-8")
    (data / "image.png").write_bytes(b"x")  # not a corpus: not offered
    (runs / "done").mkdir(parents=True)
    (runs / "done" / "scale.json").write_text(json.dumps(SCALE_JSON), encoding="utf-8")
    (runs / "other").mkdir()  # a folder without a sweep: not listed
    (tmp_path / "secret.txt").write_text("outside", encoding="utf-8")
    sweeps.JOBS.clear()
    with TestClient(create_app(runs_dir=runs, data_dir=data)) as client:
        yield client, data, runs
    sweeps.JOBS.clear()


def test_the_listing_names_corpora_and_finished_sweeps(lab):
    client, _, _ = lab
    got = client.get("/api/scale/sweeps").json()
    assert got["corpora"] == ["notes.txt", "tang"]
    assert [(s["name"], s["runs"], s["shown"], s["command"]) for s in got["finished"]] == [
        ("done", 1, True, SCALE_JSON["command"])
    ]
    page = client.get("/scale?lang=en")
    assert page.status_code == 200 and 'id="sweeps-form"' in page.text
    assert '<option value="tang">' in page.text and "image.png" not in page.text


def test_a_finished_sweep_is_shown_with_its_command_and_nothing_outside_is_opened(lab):
    client, _, _ = lab
    page = client.get("/scale", params={"sweep": "done", "lang": "en"})
    assert page.status_code == 200 and 'id="sweep"' in page.text and SCALE_JSON["command"] in page.text
    for name in ("other", "../secret.txt", "/etc", "..", "done/../done"):
        page = client.get("/scale", params={"sweep": name, "lang": "en"})
        assert page.status_code == 404 and 'id="sweep"' not in page.text, name


def test_the_form_refuses_by_name_and_never_reads_a_path(lab, monkeypatch):
    client, _, _ = lab
    started = []
    monkeypatch.setattr(sweeps, "_run", lambda *args: started.append(args))
    for corpus, minutes, problem in (
        ("../secret.txt", "1", "corpus"),
        ("/etc/passwd", "1", "corpus"),
        ("tang", "100", "minutes"),
        ("tang", "abc", "minutes"),
        ("tang", "0", "minutes"),
    ):
        answer = client.post(
            "/scale/start", data={"corpus": corpus, "minutes": minutes, "lang": "en"}, follow_redirects=False
        )
        assert answer.status_code == 303 and f"error={problem}" in answer.headers["location"], (corpus, minutes)
        assert 'id="sweeps-error"' in client.get(answer.headers["location"]).text
    assert started == [] and sweeps.JOBS == {}
    # the message is the catalog's, never text from the request
    page = client.get("/scale", params={"error": "<b>hello</b>", "lang": "en"})
    assert 'id="sweeps-error"' not in page.text and "<b>hello" not in page.text


def test_without_a_data_or_runs_folder_the_page_says_how_to_give_one():
    with TestClient(create_app()) as client:
        page = client.get("/scale?lang=en")
        assert page.status_code == 200 and 'id="sweeps-no-data"' in page.text and "attnlab serve --data" in page.text
        assert client.get("/api/scale/sweeps").json()["corpora"] == []
        answer = client.post("/scale/start", data={"corpus": "x", "minutes": "1"}, follow_redirects=False)
        assert "error=runs" in answer.headers["location"]


def test_a_sweep_started_on_the_page_is_followed_and_then_listed(lab, monkeypatch):
    client, data, runs = lab
    go, reported, calls = threading.Event(), threading.Event(), []

    def fake_sweep(corpus_data, out, *, minutes, progress, command, **kw):
        calls.append((corpus_data[0], out, minutes))
        progress({"phase": "run", "run": "L1-d16-C0", "done": 0, "of": 3, "left_s": 60})
        reported.set()
        assert go.wait(60)
        out.mkdir(parents=True)
        (out / "scale.json").write_text(json.dumps({**SCALE_JSON, "command": command}), encoding="utf-8")

    monkeypatch.setattr(sweep_module, "run_sweep", fake_sweep)
    try:
        _follow(client, data, runs, go, reported, calls)
    finally:
        go.set()  # a failed assertion leaves no thread waiting


def _follow(client, data, runs, go, reported, calls) -> None:
    answer = client.post(
        "/scale/start", data={"corpus": "notes.txt", "minutes": "2", "lang": "en"}, follow_redirects=False
    )
    assert answer.status_code == 303 and "error" not in answer.headers["location"]
    job = next(iter(sweeps.JOBS.values()))
    assert job.name == "scale-notes.txt-1" and str(data / "notes.txt") in job.command
    assert reported.wait(60)  # the sweep's thread has reported its first run (it starts when the machine lets it)
    page = client.get("/scale?lang=en").text
    assert 'http-equiv="refresh"' in page and "run 1/3: L1-d16-C0" in page  # follows itself while it runs
    again = client.post("/scale/start", data={"corpus": "tang", "minutes": "1"}, follow_redirects=False)
    assert "error=busy" in again.headers["location"]  # one sweep at a time
    go.set()
    for _ in range(600):
        if job.status != "running":
            break
        threading.Event().wait(0.05)
    assert job.status == "done", job.error
    listing = client.get("/api/scale/sweeps").json()
    assert [s["name"] for s in listing["finished"]] == ["done", "scale-notes.txt-1"]
    assert listing["jobs"][0]["status"] == "done"
    page = client.get("/scale", params={"sweep": "scale-notes.txt-1", "lang": "en"}).text
    assert job.command in page and 'http-equiv="refresh"' not in page
    assert [(out, minutes) for _, out, minutes in calls] == [(runs / "scale-notes.txt-1", 2.0)]

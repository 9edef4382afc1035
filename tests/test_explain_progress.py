"""A lesson that trains models shows how far the training has got: train/progress.py carries each model's steps
from the training loop to web/budget.py; a first visit to such a page answers 202 with the steps (and a
<meta refresh> for a browser without JavaScript), GET /api/explain/{topic}/progress reports them, and once
trained the result is kept, so the next visit answers at once. The training is held at a gate, so nothing here
depends on how fast the machine is."""

from __future__ import annotations

import html
import re
import threading
import time

import pytest
from fastapi.testclient import TestClient

from attnlab.i18n import t
from attnlab.lessons.seq2seq.models import KINDS
from attnlab.train import progress
from attnlab.web import lesson_cache
from attnlab.web.app import create_app
from attnlab.web.pages import explain as explain_pages

pytestmark = pytest.mark.slow  # trains models

HTML = {"accept": "text/html"}
SMALL = {"train_steps": "100", "n_test": "5", "n_seeds": "1", "text": "2026"}


def hold_training(monkeypatch) -> threading.Event:
    """Every model's training waits after its first step until the returned gate is set; pages never wait to
    show the progress."""
    gate, real = threading.Event(), progress.report

    def held(name: str, step: int, steps: int) -> None:
        real(name, step, steps)
        if step == 1:
            gate.wait()

    monkeypatch.setattr(progress, "report", held)
    monkeypatch.setattr(explain_pages, "PROGRESS_AFTER_S", 0.0)
    return gate


def test_reports_reach_only_a_progress_being_reported_to():
    progress.report("nobody", 1, 2)  # no Progress on this thread: goes nowhere
    p = progress.Progress()
    assert not p.started
    with progress.reporting(p):
        progress.report("a", 0, 10)
        progress.report("b", 0, 5)
        progress.report("a", 3, 10)
    progress.report("a", 9, 10)  # after the block: not recorded
    assert p.started and p.snapshot() == [{"name": "a", "step": 3, "steps": 10}, {"name": "b", "step": 0, "steps": 5}]


def test_a_first_visit_shows_the_training_and_the_next_one_the_results(monkeypatch):
    gate = hold_training(monkeypatch)
    monkeypatch.setattr(lesson_cache, "CACHE_MIN_S", 0.0)  # kept however quick, as "done" below needs
    params = {**SMALL, "seed": "4242", "lang": "en"}  # a seed no other test trains: this visit is the first
    url = "/api/explain/seq2seq/progress"
    with TestClient(create_app()) as client:
        try:
            assert client.get(url, params=params).json() == {"status": "idle", "models": []}
            page = client.get("/explain/seq2seq", params=params, headers=HTML)
            assert page.status_code == 202
            assert '<noscript><meta http-equiv="refresh"' in page.text and "progress.js" in page.text
            assert re.findall(r'<li data-model="(\w+)">', page.text) == list(KINDS)  # every model, from the start
            for kind in KINDS:
                assert t(f"explain.seq2seq.model.{kind}", "en") in page.text
            assert 'id="claims-h"' not in page.text  # no results yet
            state = client.get(url, params=params).json()
            assert state["status"] == "training" and [m["name"] for m in state["models"]] == list(KINDS)
            first = state["models"][0]
            assert first["steps"] == 100 and first["step"] in (0, 1)  # held after its first step
            assert [m["step"] for m in state["models"][1:]] == [0] * (len(KINDS) - 1)
        finally:
            gate.set()
        seen = [state]
        while state["status"] == "training":
            time.sleep(0.05)
            state = client.get(url, params=params).json()
            seen.append(state)
        assert state == {"status": "done", "models": []}
        steps = [[m["step"] for m in s["models"]] for s in seen if s["status"] == "training"]
        assert all(a <= b for before, after in zip(steps, steps[1:]) for a, b in zip(before, after))  # never back
        # The run is trained; its claims' null (the same models trained on shuffled targets) trains next, and the
        # page follows that training, saying what it is
        page = client.get("/explain/seq2seq", params=params, headers=HTML)
        while page.status_code == 202:
            null_url = html.unescape(re.search(r'data-progress="([^"]+)"', page.text).group(1))
            assert "shuffle=True" in null_url and 'id="training-null"' in page.text, null_url
            assert t("explain.seq2seq.null.shuffled", "en") in html.unescape(page.text)
            while client.get(null_url).json()["status"] == "training":
                time.sleep(0.05)
            page = client.get("/explain/seq2seq", params=params, headers=HTML)
        assert page.status_code == 200 and 'id="claims-h"' in page.text and 'id="training"' not in page.text
        api = client.get("/api/explain/seq2seq", params=params)
        assert api.status_code == 200 and api.json()["params"]["seed"] == 4242


def test_a_lesson_that_trains_nothing_never_shows_progress(monkeypatch):
    monkeypatch.setattr(explain_pages, "PROGRESS_AFTER_S", 0.0)
    with TestClient(create_app()) as client:
        page = client.get("/explain/sqrt-dk", params={"n_samples": "1000", "lang": "en"}, headers=HTML)
        assert page.status_code == 200 and 'id="training"' not in page.text
        bad = client.get("/api/explain/seq2seq/progress", params={"train_steps": "-7"})
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", "train_steps"]
        assert client.get("/api/explain/nothing/progress").status_code == 404

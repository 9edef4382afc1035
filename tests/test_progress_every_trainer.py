"""Every lesson that trains shows how far its training has got (issue 22 §6), not only seq2seq and mlm: break,
one-hot and multihead report each model's steps, every model listed from the start and named in the page's
language. The training is held at a gate after its first step and then stopped (as when the learner leaves), so
nothing here waits for a whole training or depends on how fast the machine is; and reporting never changes what
a lesson computes."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import asdict

import pytest
import torch
from fastapi.testclient import TestClient

from attnlab.i18n import LANGS, catalog, t
from attnlab.lessons.break_it import runs as break_runs
from attnlab.lessons.explain import TOPICS
from attnlab.lessons.multihead import lesson as multihead
from attnlab.lessons.one_hot import lesson as one_hot
from attnlab.train import progress
from attnlab.web.app import create_app
from attnlab.web.pages import explain as explain_pages

pytestmark = pytest.mark.slow  # trains models

HTML = {"accept": "text/html"}
WAIT_S = 120  # a generous bound on a held event: only a broken computation comes near it
# topic: (small settings no other test trains, so this visit is the first; the models it reports; the page's language)
CASES = {
    "break": ({"ablate": "no-positions", "seeds": "3", "train_steps": "50"}, ["intact", "ablated"], "zh"),
    "one-hot": ({"train_steps": "20", "d_model": "8", "seed": "4243"}, ["gpt"], "en"),
    "multihead": (
        {"train_steps": "25", "d_model": "8", "n_heads": "2", "n": "4", "seed": "4242"},
        ["heads_1", "heads_2", "heads_4"],
        "zh",
    ),
}


class Gate:
    """progress.report, held after the first training step until opened; then the computation stops as if its
    page had gone (nothing is kept, nothing trains on after the test)."""

    def __init__(self, monkeypatch):
        self.reached, self.open, self.stopped = threading.Event(), threading.Event(), threading.Event()
        real = progress.report

        def held(name: str, step: int, steps: int) -> None:
            real(name, step, steps)
            if step > 0:
                self.reached.set()
                self.open.wait(WAIT_S)
                self.stopped.set()
                raise progress.Cancelled("the test has seen the progress")

        monkeypatch.setattr(progress, "report", held)
        monkeypatch.setattr(explain_pages, "PROGRESS_AFTER_S", 0.0)


def key(topic: str, name: str) -> str:
    return f"explain.{TOPICS[topic].slug}.model.{name}"


@pytest.mark.parametrize("topic", CASES)
def test_a_training_lesson_shows_every_model_while_it_trains(monkeypatch, topic):
    settings, names, lang = CASES[topic]
    params = {**settings, "lang": lang}
    url = f"/api/explain/{topic}/progress"
    gate = Gate(monkeypatch)
    with TestClient(create_app()) as client:
        try:
            page = client.get(f"/explain/{topic}", params=params, headers=HTML)
            assert page.status_code == 202, page.text[:300]
            assert re.findall(r'<li data-model="(\w+)">', page.text) == names  # every model, from the start
            for name in names:
                assert t(key(topic, name), lang) in page.text
            assert 'id="claims-h"' not in page.text  # no results yet
            assert gate.reached.wait(WAIT_S)
            state = client.get(url, params=params).json()
            assert state["status"] == "training" and [m["name"] for m in state["models"]] == names
            assert all(m["steps"] > 0 and m["label"] == t(key(topic, m["name"]), lang) for m in state["models"])
            assert [m["step"] for m in state["models"]] == [1] + [0] * (len(names) - 1)  # held after one step
        finally:
            gate.open.set()
        assert gate.stopped.wait(WAIT_S)
        deadline = time.monotonic() + WAIT_S  # the stopped computation leaves the budget's books
        while client.get(url, params=params).json()["status"] == "training" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert client.get(url, params=params).json() == {"status": "idle", "models": []}  # nothing was kept


def test_every_reported_model_is_named_in_both_languages():
    strings = catalog()
    for topic, (_, names, _) in CASES.items():
        for name in names:
            assert all(strings[key(topic, name)][lang] for lang in LANGS), key(topic, name)


def reported(compute) -> tuple[object, list[dict]]:
    """compute() run with its reports received, and what was reported."""
    p = progress.Progress()
    with progress.reporting(p):
        out = compute()
    return out, p.snapshot()


def test_reporting_changes_nothing_a_lesson_computes():
    stream = torch.arange(40) % 7  # (40,) a corpus of 7 characters

    def embeddings():
        return one_hot.train(stream, 7, 8, 4, 4244)  # (trained table, initial table, losses)

    (table, start, losses), rows = reported(embeddings)
    again = embeddings()
    assert rows == [{"name": "gpt", "step": 4, "steps": 4}] and losses == again[2]
    assert torch.equal(table, again[0]) and torch.equal(start, again[1])

    def heads():
        return multihead.train_one.__wrapped__(2, 3, 4244)  # not the cached one: trained twice

    got, rows = reported(heads)
    assert rows == [{"name": "heads_2", "step": 3, "steps": 3}] and got == heads()

    data = break_runs.corpus_data("jingyesi")

    def pair_run():
        model = break_runs._build_sized("no-positions", data, 4244, ("no-positions",))
        return asdict(break_runs.train(model, data, 1, 4244, "ablated")) | {"seconds": 0.0}, model.state_dict()

    (got, weights), rows = reported(pair_run)
    again, weights_again = pair_run()
    assert rows == [{"name": "ablated", "step": 1, "steps": 1}] and got == again
    assert all(torch.equal(weights[k], weights_again[k]) for k in weights)

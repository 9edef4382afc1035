"""A first visit to a lesson that trains models, in Chromium: the page shows each model's steps while it trains
(JavaScript on: progress.js polls the progress API and updates them; off: a <meta refresh> reloads the page),
then shows the results by itself. The training waits at a gate until the test has looked, so the progress page
is there however fast the machine is."""

from __future__ import annotations

import threading
from urllib.parse import urlencode

import pytest

from attnlab.i18n import t
from attnlab.lessons.seq2seq.models import KINDS
from attnlab.train import progress
from attnlab.web.pages import explain as explain_pages

CASES = [  # a seed no other test trains, so this visit is the first
    (
        "seq2seq",
        {"train_steps": "100", "n_test": "5", "n_seeds": "1", "text": "2026", "seed": "4343"},
        list(KINDS),
        "en",
        True,
    ),
    (
        "seq2seq",
        {"train_steps": "100", "n_test": "5", "n_seeds": "1", "text": "2026", "seed": "4344"},
        list(KINDS),
        "zh",
        False,
    ),
    ("mlm", {"steps": "20", "d_model": "8", "seed": "4345"}, ["bidirectional", "causal", "causal_fill"], "zh", True),
]


SHOWN = """() => ({title: document.getElementById('training-h').textContent,
  models: [...document.querySelectorAll('#training li')].map(l => l.dataset.model),
  names: [...document.querySelectorAll('#training li .name')].map(l => l.textContent),
  claims: document.querySelectorAll('#claims-h').length})"""


@pytest.mark.parametrize(
    "topic, params, models, lang, js", CASES, ids=["seq2seq-en-js-on", "seq2seq-zh-js-off", "mlm-zh-js-on"]
)
def test_a_first_visit_shows_the_training_then_the_results(open_page, monkeypatch, topic, params, models, lang, js):
    gate, real = threading.Event(), progress.report

    def held(name: str, step: int, steps: int) -> None:
        real(name, step, steps)
        if step == 1:
            gate.wait()  # each model waits after its first step until the test has looked

    monkeypatch.setattr(progress, "report", held)
    monkeypatch.setattr(explain_pages, "PROGRESS_AFTER_S", 0.0)
    try:
        page = open_page(f"/explain/{topic}?" + urlencode({**params, "lang": lang}), js=js, trained=False)
        shown = page.evaluate(SHOWN)  # in one call: without JavaScript the page reloads itself every 2 s
        assert shown == {
            "title": t("explain.progress.h", lang),
            "models": models,
            "claims": 0,
            "names": [t(f"explain.{topic}.model.{m}", lang) for m in models],
        }
        if js:  # progress.js has polled and is still showing the training (held at step 1)
            page.wait_for_function("() => Number(document.getElementById('training').dataset.polled || 0) >= 2")
            steps = page.eval_on_selector_all("#training [data-step]", "bs => bs.map(b => Number(b.textContent))")
            assert steps[0] in (0, 1) and steps[1:] == [0] * (len(models) - 1)
    finally:
        gate.set()
    page.locator("#claims-h").wait_for()  # the page reloads itself once the models are trained
    assert page.locator("#training").count() == 0
    assert page.locator(".claim").count() > 0

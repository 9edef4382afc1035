"""The explain pages as a learner first meets them (issue 22, items 4 and 6), in Chromium:

- a lesson that trains fits the window while it trains and once trained, at 390 and 1280 px, JavaScript on and off;
  the topic chips are one short strip on a phone; the seq2seq task's labels fit their dropdown;
- with JavaScript on, new settings put the old results away while they compute, show each model's steps, and the
  equivalent CLI line follows the controls;
- the course's question comes first and its checked claims (the answers) open only after an answer is chosen;
- every claim's mark says what was measured in words (shown / not shown / contradicted), not a bare ✓.

Training is held at a gate (train/progress.py's report) until the test has looked, so no wait depends on speed.
"""

from __future__ import annotations

import io
import threading
from types import SimpleNamespace
from urllib.parse import urlencode

import pytest
from browser_fixtures import with_answer
from browser_support import explain_update

from attnlab.i18n import t
from attnlab.train import progress
from attnlab.web.pages import explain as explain_pages

MLM = {"steps": "20", "d_model": "8"}  # the smallest mlm (test_explain_pages.py's SMALL: a shared cached result)
FIGURE = "**/explain/*/figure.png*"
MEASURE = """() => ({width: document.documentElement.scrollWidth, view: window.innerWidth,
  chips: document.querySelector('nav.topics').getBoundingClientRect().height})"""
CLAIM_MARKS = """() => [...document.querySelectorAll('#claims li')].map(li => [li.dataset.status,
  li.querySelector('.claim-mark').textContent, li.querySelector('.claim-word').textContent])"""
MARKS = {"shown": "✓", "not_shown": "○", "contradicted": "✗"}


@pytest.fixture
def gate(monkeypatch):
    """gate.hold(): from now on each model waits after its first training step until gate.set(), and a page
    shows its training at once."""
    held, real = threading.Event(), progress.report

    def report(name: str, step: int, steps: int) -> None:
        real(name, step, steps)
        if step == 1:
            held.wait()

    def hold() -> None:
        monkeypatch.setattr(progress, "report", report)
        monkeypatch.setattr(explain_pages, "PROGRESS_AFTER_S", 0.0)

    held.hold = hold
    yield held
    held.set()


def blank_figures(page) -> None:
    """The figure as a blank PNG: this file is about layout and order, and drawing it would cost the most."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (1000, 640), "white").save(buffer, "PNG")
    png = buffer.getvalue()
    page.route(FIGURE, lambda route: route.fulfill(status=200, content_type="image/png", body=png))


def fits(page, width: int) -> dict:
    # A busy server answers a first visit with the progress page, which reloads itself: #results can be found on the
    # new document before its stylesheet has loaded, when an unstyled figure is as wide as its PNG.
    page.wait_for_load_state("load")
    page.set_viewport_size({"width": width, "height": 900})
    m = page.evaluate(MEASURE)
    assert m["width"] <= m["view"] == width, m
    return m


def test_a_training_lesson_fits_while_it_trains_and_once_trained(open_page, gate):
    query = urlencode({**MLM, "seed": "4361", "lang": "en"})  # a seed no other test trains: a first visit
    gate.hold()
    on = open_page(f"/explain/mlm?{query}", trained=False, viewport={"width": 390, "height": 900})
    blank_figures(on)
    assert on.locator("#training li").count() == 3
    assert fits(on, 390)["chips"] < 120  # one strip of topic chips, not ~600 px of them
    fits(on, 1280)
    for width in (390, 1280):  # without JavaScript the page reloads itself every 2 s: one measure per load
        off = open_page(f"/explain/mlm?{query}", js=False, trained=False, viewport={"width": width, "height": 900})
        m = off.evaluate(MEASURE)
        assert off.locator("#training li").count() == 3 and m["width"] <= m["view"] == width, m
    gate.set()
    on.locator("#results").wait_for()  # progress.js reloads the page once trained
    on.wait_for_load_state("load")
    fits(on, 390)
    fits(on, 1280)


def test_seq2seq_trained_fits_without_javascript_and_its_task_labels_fit(open_page):
    page = open_page("/", js=False, viewport={"width": 390, "height": 900})
    blank_figures(page)
    page.goto(
        with_answer(
            "/explain/seq2seq?" + urlencode({"train_steps": "0", "n_test": "5", "n_seeds": "1", "text": "2026"})
        )
    )
    page.locator("#results").wait_for()
    fits(page, 390)
    labels = page.evaluate("""() => { const s = document.getElementById('p-task');
      const c = document.createElement('canvas').getContext('2d'); c.font = getComputedStyle(s).font;
      return {box: s.clientWidth, texts: [...s.options].map(o => c.measureText(o.text).width)}; }""")
    assert max(labels["texts"]) + 28 <= labels["box"], labels  # 28 px: the select's padding and its arrow
    fits(page, 1280)


def test_new_settings_put_the_old_results_away_and_show_the_training(open_page, gate):
    page = open_page("/", viewport={"width": 390, "height": 900})
    blank_figures(page)
    page.goto(with_answer("/explain/mlm?" + urlencode({**MLM, "lang": "en"})))  # its question answered
    page.locator("#results").wait_for()  # a first visit shows the training, then reloads itself
    page.wait_for_load_state("load")
    assert page.locator("#results").is_visible() and page.locator("#computing").is_hidden()
    gate.hold()
    page.locator("#p-seed").fill("4362")  # new settings: the models train (held at their first step)
    page.wait_for_function("() => document.querySelectorAll('#computing .training li').length === 3")
    assert page.locator("#results").is_hidden() and page.locator("#figure-card").is_hidden()
    assert page.locator("#computing").is_visible() and page.locator("#claims").is_hidden()
    names = page.eval_on_selector_all("#computing .training .name", "els => els.map(e => e.textContent)")
    assert names == [t(f"explain.mlm.model.{m}", "en") for m in ("bidirectional", "causal", "causal_fill")]
    assert page.inner_text("#explain-cli") == "attnlab explain mlm --steps 20 --d-model 8 --seed 4362"

    page.evaluate(
        "() => { window.__explained = false; document.addEventListener('explain:updated', "
        "() => { window.__explained = true; }, {once: true}); }"
    )
    page.locator("#p-seed").fill("0")  # back to the kept result: the training asked for is dropped
    page.wait_for_function("() => window.__explained === true")
    assert page.locator("#results").is_visible() and page.locator("#computing").is_hidden()
    assert page.inner_text("#explain-cli") == "attnlab explain mlm --steps 20 --d-model 8"


@pytest.mark.parametrize("lang, js", [("zh", True), ("en", False)], ids=["zh-js", "en-no-js"])
def test_the_question_comes_first_and_the_claims_after_an_answer(open_page, api, lang, js):
    query = {"n_samples": "1000", "n_keys": "8", "lang": lang}
    page = open_page("/", js=js)
    blank_figures(page)
    page.goto("/explain/sqrt-dk?" + urlencode(query))
    order = page.evaluate("""() => ['#ask-q', '#figure-card', '#claims'].map(s => document.querySelector(s))
      .map((el, i, all) => i === 0 || Boolean(all[i - 1].compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING))""")
    assert order == [True, True, True]  # the question, then the figure (the finding), then the checked claims
    assert page.inner_text("#ask-q") == t("explain.sqrt_dk.ask.q", lang)
    assert page.locator("#claims").is_hidden() and page.locator("#figure-card").is_hidden()
    if js:  # revealing before answering: the browser asks for a choice, and nothing shows
        page.click("#reveal-go")
        assert page.locator("#claims").is_hidden() and page.locator("#verdict").is_hidden()
    page.check("#predict-b")
    if js:
        explain_update(page, lambda: page.click("#reveal-go"))
    else:
        with page.expect_navigation():
            page.click("#reveal-go")
    assert page.locator("#claims").is_visible()
    assert page.get_attribute("#verdict", "data-correct") == "true"  # Var(q·k) = d_k: the run says b
    data = api("/api/explain/sqrt-dk?" + urlencode(query))
    want = [[c["status"], MARKS[c["status"]], t(f"explain.claim.word.{c['status']}", lang)] for c in data["claims"]]
    assert page.evaluate(CLAIM_MARKS) == want
    if js:  # claims redrawn from the API keep their words; the CLI line follows the slider
        page.evaluate(
            "() => { window.__explained = false; document.addEventListener('explain:updated', "
            "() => { window.__explained = true; }, {once: true}); }"
        )
        page.locator("#p-n_keys").fill("128")
        page.wait_for_function("() => window.__explained === true")
        data = api("/api/explain/sqrt-dk?" + urlencode({**query, "n_keys": "128"}))
        want = [[c["status"], MARKS[c["status"]], t(f"explain.claim.word.{c['status']}", lang)] for c in data["claims"]]
        assert page.evaluate(CLAIM_MARKS) == want and page.locator("#claims").is_visible()
        assert page.inner_text("#explain-cli") == "attnlab explain sqrt-dk --n-samples 1000 --n-keys 128"
    else:
        assert page.inner_text("#explain-cli") == "attnlab explain sqrt-dk --n-samples 1000 --n-keys 8"


def test_the_mlm_legend_stays_off_the_bars():
    """The by-verse chart's legend sat on the first verse's bars; it goes below the axes."""
    from attnlab.lessons.common.figure import save
    from attnlab.lessons.mlm.figure import plot

    kinds = ("bidirectional", "causal", "causal_fill", "baseline")
    guess = SimpleNamespace(char="月", bidirectional="月", causal="光", causal_fill="月")
    r = SimpleNamespace(
        accuracy=dict.fromkeys(kinds, 0.9),
        correct=dict.fromkeys(kinds, 9),
        n_masked=10,
        by_verse={k: {"first": 1.0, "second": 0.9} for k in kinds},
        chance=0.1,
        corpus="test",
        examples=[SimpleNamespace(guesses=[guess])],
    )
    drawn = []
    save(lambda result, fig, tr: (plot(result, fig, tr), drawn.append(fig)), r, io.BytesIO(), lang="en")
    ax = drawn[0].axes[1]
    legend = ax.get_legend().get_window_extent()
    bars = [p.get_window_extent() for p in ax.patches if p.get_height() > 0]
    labels = [x.get_window_extent() for x in ax.get_xticklabels()]
    assert len(bars) == 6 and not any(legend.overlaps(b) for b in bars + labels)
    assert not labels[0].overlaps(labels[1])  # the two verses' names side by side

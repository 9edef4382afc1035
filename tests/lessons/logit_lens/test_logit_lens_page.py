"""The logit-lens page in Chromium, JavaScript on and off, zh and en: the answer by layer, the heatmap of the final
answer's probability, the lens's top tokens at every layer and position, and the claims are the API's, before and
after a new prompt."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from browser_support import explain_update

from attnlab.i18n import t
from attnlab.lessons.common.params import ParamError
from attnlab.lessons.explain import explain

SMALL = {"n_layers": "2", "train_steps": "20", "seed": "1"}
BINDS = """() => [...document.querySelectorAll('[data-results] [data-bind][data-value]')]
  .filter(el => !el.closest('[data-each]') && !el.closest('template')).map(el => [el.dataset.bind, el.dataset.value])"""
ANSWER = """() => [...document.querySelectorAll('#lens-answer tbody tr')].map(tr =>
  [...tr.querySelectorAll('td[data-bind]')].map(c => Number(c.dataset.value)))"""
HEAT = """() => [...document.querySelectorAll('#lens-heat tbody tr')].map(tr =>
  [...tr.querySelectorAll('td')].map(c => Number(c.dataset.value)))"""
TOPS = """() => [[...document.querySelectorAll('#lens-tops thead th')].map(c => c.textContent),
  ...[...document.querySelectorAll('#lens-tops tbody tr')].map(tr => [...tr.querySelectorAll('td')].map(c => c.textContent))]"""


def at(data, path: str):
    for key in path.split("."):
        data = data[int(key)] if isinstance(data, list) else data[key]
    return data


def check(page, data) -> None:
    binds = page.evaluate(BINDS)
    assert len(binds) >= 3
    for path, value in binds:
        assert float(value) == at(data, path), path
    keys = ("answer_rank", "answer_p", "untrained_rank", "untrained_p")
    assert page.evaluate(ANSWER) == [[row[k] for k in keys] for row in data["rows"]]
    assert page.evaluate(HEAT) == data["final_p"]
    assert page.evaluate(TOPS) == [data["top_header"], *data["top_rows"]]
    assert page.locator("[data-bind=answer]").first.inner_text() == data["answer"]
    texts = page.eval_on_selector_all("#claims li .text", "els => els.map(e => e.textContent)")
    assert texts == [c["text"] for c in data["claims"]]


@pytest.mark.parametrize("lang, js", [("zh", True), ("en", False)], ids=["zh-js-on", "en-js-off"])
def test_the_logit_lens_page_shows_the_api_numbers_and_follows_a_new_prompt(open_page, api, lang, js):
    page = open_page("/explain/logit-lens?" + urlencode({**SMALL, "lang": lang}), js=js)
    data = api("/api/explain/logit-lens?" + urlencode({**SMALL, "lang": lang}))
    assert page.locator("#lens-answer-h").inner_text() == t("explain.logit_lens.h.answer", lang)
    check(page, data)
    prompt = "举头望明"
    if js:
        explain_update(page, lambda: page.fill("#p-prompt", prompt))
    else:
        page.fill("#p-prompt", prompt)
        page.click("#explain-go")
        page.wait_for_url("**prompt=**")
        if page.locator("#training").count():  # new settings train first (202): the page reloads itself when done
            page.wait_for_selector("#results, #explain-error:not([hidden])")
    data = api("/api/explain/logit-lens?" + urlencode({**SMALL, "prompt": prompt, "lang": lang}))
    assert data["tokens"] == list(prompt)
    check(page, data)


def test_a_prompt_outside_the_vocabulary_is_said_on_the_page(chromium, lab_url, new_watch):
    # The API answers 422, which Chromium logs as a failed resource; that one message is expected here.
    context = chromium.new_context(base_url=lab_url)
    watch = new_watch()
    watch.attach(context)
    page = context.new_page()
    page.on(
        "console", lambda m: watch.console_errors.append(m.text) if m.type == "error" and "422" not in m.text else None
    )
    page.on("pageerror", lambda e: watch.page_errors.append(str(e)))
    try:
        page.goto("/explain/logit-lens?" + urlencode({**SMALL, "lang": "en"}))
        page.fill("#p-prompt", "床前你好")
        page.wait_for_selector("#explain-error:not([hidden])")
        with pytest.raises(ParamError) as refused:  # the Python call's message, in the page's language
            explain("logit-lens", **{**SMALL, "prompt": "床前你好"})
        assert (
            page.locator("#explain-error").inner_text()
            == f"{t('explain.ui.problem', 'en')} {refused.value.localized('en')}"
        )
        assert "你好" in refused.value.localized("en") and "静夜思" in refused.value.localized("en")
        assert watch.problems() == []
    finally:
        context.close()

"""The induction page in Chromium, JavaScript on and off, zh and en: the prefix-matching table, the ICL table, the two
attention maps on the repeated text and the claims are the API's numbers, before and after a new seed."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from browser_support import explain_update

from attnlab.i18n import t

SMALL = {"steps": "20", "n": "6", "vocab": "8", "d_model": "16", "seed": "1"}
BINDS = """() => [...document.querySelectorAll('[data-results] [data-bind][data-value]')]
  .filter(el => !el.closest('[data-each]') && !el.closest('template') && !el.closest('table'))
  .map(el => [el.dataset.bind, el.dataset.value])"""
MATRIX = """(sel) => [...document.querySelectorAll(sel + ' tbody tr')].map(tr =>
  [...tr.querySelectorAll('td')].map(c => Number(c.dataset.value)))"""
LABELS = """(sel) => [...document.querySelectorAll(sel + ' thead th')].map(c => c.textContent)"""


def at(data, path: str):
    for key in path.split("."):
        data = data[int(key)] if isinstance(data, list) else data[key]
    return data


def check(page, data) -> None:
    binds = page.evaluate(BINDS)
    assert len(binds) >= 6
    for path, value in binds:
        assert float(value) == at(data, path), path
    assert page.evaluate(MATRIX, "#induction-pm") == data["pm_rows"]
    assert page.evaluate(LABELS, "#induction-pm") == data["pm_cols"]
    assert page.evaluate(MATRIX, "#induction-icl") == data["icl_rows"]
    assert page.evaluate(MATRIX, "#induction-map-previous") == data["text"]["previous_map"]["weights"]
    assert page.evaluate(MATRIX, "#induction-map-induction") == data["text"]["induction_map"]["weights"]
    assert page.evaluate(LABELS, "#induction-map-induction") == data["text"]["chars"]
    texts = page.eval_on_selector_all("#claims li .text", "els => els.map(e => e.textContent)")
    assert texts == [c["text"] for c in data["claims"]]


@pytest.mark.parametrize("lang, js", [("zh", True), ("en", False)], ids=["zh-js-on", "en-js-off"])
def test_the_induction_page_shows_the_api_numbers_and_follows_a_new_seed(open_page, api, lang, js):
    page = open_page("/explain/induction?" + urlencode({**SMALL, "lang": lang}), js=js)
    data = api("/api/explain/induction?" + urlencode({**SMALL, "lang": lang}))
    assert page.locator("#induction-curves-h").inner_text() == t("explain.induction.h.curves", lang)
    check(page, data)
    if js:
        explain_update(page, lambda: page.fill("#p-seed", "2"))
    else:
        page.fill("#p-seed", "2")
        page.click("#explain-go")
        page.wait_for_url("**seed=2**")
        if page.locator("#training").count():  # new settings train first (202): the page reloads itself when done
            page.wait_for_selector("#results, #explain-error:not([hidden])")
    data = api("/api/explain/induction?" + urlencode({**SMALL, "seed": "2", "lang": lang}))
    check(page, data)
    if js:  # the new figure is drawn too (and nothing is left computing when the server stops)
        page.wait_for_function(
            "() => { const img = document.getElementById('explain-figure'); "
            "return img.complete && img.naturalWidth > 0 && img.src.includes('seed=2'); }"
        )

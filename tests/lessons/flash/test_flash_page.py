"""The flash page in Chromium, JavaScript on and off, zh and en: every number it binds, the hand example's tile-by-tile
rows included, is the API's number, before and after another hand example (more keys, another tile size)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from browser_support import explain_update

from attnlab.i18n import t

SMALL = {"n_max": "512", "block": "64", "window": "32"}
# every bound number with its path resolved the way explain.js resolves it (rows: the data-each array and index)
BINDS = """() => [...document.querySelectorAll('[data-results] [data-bind][data-value]')].filter(el => !el.closest('template'))
  .map(el => { const row = el.closest('[data-each] > *'); const each = row && row.parentElement.dataset.each;
    return [each || null, row ? [...row.parentElement.children].filter(c => c.tagName !== 'TEMPLATE').indexOf(row) : null,
            el.dataset.bind, Number(el.dataset.value)]; })"""


def at(data, path: str, base=None):
    node = data if base is None else base
    for key in path.split("."):
        if key == "$":
            node = data
            continue
        node = node[int(key)] if isinstance(node, list) else node[key]
    return node


def check(page, data) -> int:
    checked = 0
    for each, i, path, value in page.evaluate(BINDS):
        if path.endswith("seconds"):
            continue  # a clock reading: measured afresh by each call
        if each is None:
            expected = at(data, path)
        elif path == "@n":
            expected = i + 1
        else:
            expected = at(data, path.replace("@i", str(i)), at(data, each)[i])
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-300), (each, i, path)
        checked += 1
    steps = page.locator("#flash-steps-table tbody tr").count()
    assert steps == len(data["hand"]["steps"])
    texts = page.eval_on_selector_all("#claims li .text", "els => els.map(e => e.textContent)")
    assert texts == [c["text"] for c in data["claims"]]
    return checked


FIGURE_DRAWN = """(part) => { const f = document.getElementById('explain-figure');
  return f.src.includes(part) && f.complete && f.naturalWidth > 0; }"""


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("js", [False, True], ids=["js-off", "js-on"])
def test_the_flash_page_shows_the_api_numbers_and_follows_a_new_example(open_page, api, lang, js):
    page = open_page("/explain/flash?" + urlencode({**SMALL, "lang": lang}), js=js)
    data = api("/api/explain/flash?" + urlencode({**SMALL, "lang": lang}))
    assert page.locator("#flash-hand-h").inner_text() == t("explain.flash.h.hand", lang)
    assert check(page, data) >= 80
    # the figure is drawn before the settings change, so the lab is never left drawing one nobody waits for
    page.wait_for_function(FIGURE_DRAWN, arg="window=32")
    if js:
        explain_update(page, lambda: page.fill("#p-n", "12"))
    else:
        page.fill("#p-n", "12")
        page.click("#explain-go")
        page.wait_for_url("**n=12**")
    data = api("/api/explain/flash?" + urlencode({**SMALL, "n": "12", "lang": lang}))
    assert [s["last"] for s in data["hand"]["steps"]] == [2, 4, 6, 8, 10, 12]
    assert check(page, data) >= 90
    page.wait_for_function(FIGURE_DRAWN, arg="n=12")

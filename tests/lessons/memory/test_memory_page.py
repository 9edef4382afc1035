"""The memory page in Chromium, JavaScript on and off, zh and en: the lab's measured-against-formula table, the
published models' rows and the chosen configuration are the API's numbers, before and after choosing another model."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from browser_support import explain_update

from attnlab.i18n import t

# every bound number outside the repeated rows: (path, data-value)
BINDS = """() => [...document.querySelectorAll('[data-results] [data-bind][data-value]')]
  .filter(el => !el.closest('[data-each]') && !el.closest('template')).map(el => [el.dataset.bind, el.dataset.value])"""
ROWS = """(id) => [...document.querySelectorAll(`#${id} tbody tr`)].map(tr =>
  [...tr.querySelectorAll('[data-bind]')].map(c => c.dataset.value === undefined ? c.textContent : Number(c.dataset.value)))"""


def at(data, path: str):
    for key in path.split("."):
        data = data[int(key)] if isinstance(data, list) else data[key]
    return data


def check(page, data) -> None:
    binds = page.evaluate(BINDS)
    assert len(binds) >= 30
    for path, value in binds:
        expected = at(data, path)
        assert (value == str(expected).lower()) if isinstance(expected, (bool, str)) else float(value) == expected, path
    rows = page.evaluate(ROWS, "inference-table")
    assert [r[0] for r in rows] == [e["name"] for e in data["published"]]
    assert [r[1:] for r in rows] == [
        [
            e["params"],
            e["context"],
            e["kv_heads"],
            e["heads"],
            e["gb"]["weights"],
            e["gb"]["kv_cache_per_sequence"],
            e["gb"]["kv_cache_mha"],
            e["gb"]["inference"],
            *[e["fits"][str(gb)] for gb in data["cards_gb"]],
        ]
        for e in data["published"]
    ]
    rows = page.evaluate(ROWS, "training-table")
    assert [r[1:] for r in rows] == [
        [e["gb"][k] for k in ("state", "activations", "activations_recomputed", "training_fp32", "training_mixed")]
        for e in data["published"]
    ]
    texts = page.eval_on_selector_all("#claims li .text", "els => els.map(e => e.textContent)")
    assert texts == [c["text"] for c in data["claims"]]


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("js", [False, True], ids=["js-off", "js-on"])
def test_the_memory_page_shows_the_api_numbers_and_follows_a_new_model(open_page, api, lang, js):
    page = open_page("/explain/memory?" + urlencode({"lang": lang}), js=js)
    data = api("/api/explain/memory?" + urlencode({"lang": lang}))
    assert page.locator("#memory-lab-h").inner_text() == t("explain.memory.h.lab", lang)
    assert page.locator('[data-bind="kv_cache_bytes"]').get_attribute("data-value") == "1073741824"
    check(page, data)
    if js:
        explain_update(page, lambda: page.select_option("#p-model", "gpt-2-small"))
    else:
        page.select_option("#p-model", "gpt-2-small")
        page.click("#explain-go")
        page.wait_for_url("**model=gpt-2-small**")
    data = api("/api/explain/memory?" + urlencode({"model": "gpt-2-small", "lang": lang}))
    assert data["chosen"]["name"] == "GPT-2 small"
    assert page.locator('[data-bind="chosen.name"]').inner_text() == "GPT-2 small"
    check(page, data)

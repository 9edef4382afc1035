"""The ffn-memory page in Chromium, JavaScript on and off, zh and en: the counts, the layers' knockouts and every
neuron row (its key contexts with the firing token marked, its value, its knockout) are the API's, before and after
a new seed."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from browser_support import explain_update

from attnlab.i18n import t

SMALL = {"layers": "1", "d_model": "16", "train_steps": "20", "top": "5", "shown": "4"}
BINDS = """() => [...document.querySelectorAll('[data-results] [data-bind][data-value]')]
  .filter(el => !el.closest('[data-each]') && !el.closest('template')).map(el => [el.dataset.bind, el.dataset.value])"""
LAYERS = """() => [...document.querySelectorAll('#ffn-layers tbody tr')].map(tr =>
  [...tr.querySelectorAll('[data-bind]')].map(c => Number(c.dataset.value)))"""
NEURONS = """() => [...document.querySelectorAll('#ffn-neurons tbody tr')].map(tr => ({
  layer: Number(tr.querySelector('[data-bind=layer]').dataset.value),
  neuron: Number(tr.querySelector('[data-bind=neuron]').dataset.value),
  windows: [...tr.querySelectorAll('.ffn-window')].map(w => [w.querySelector('[data-bind=before]').textContent,
    w.querySelector('mark').textContent, w.querySelector('[data-bind=next]').textContent]),
  value: tr.querySelector('[data-bind=value]').textContent,
  hurt: Number(tr.querySelector('[data-bind=hurt_fire]').dataset.value),
  example: tr.querySelector('[data-bind=example]').textContent}))"""


def at(data, path: str):
    for key in path.split("."):
        data = data[int(key)] if isinstance(data, list) else data[key]
    return data


def check(page, data) -> None:
    binds = page.evaluate(BINDS)
    assert len(binds) >= 10
    for path, value in binds:
        assert float(value) == at(data, path), path
    keys = ("layer", "neurons", "alive", "shared", "readable", "hurt_fire", "hurt_quiet", "hurt_top", "hurt_random")
    assert page.evaluate(LAYERS) == [[x[k] for k in keys] for x in data["layers"]]
    shown = page.evaluate(NEURONS)
    assert shown == [
        {
            "layer": n["layer"],
            "neuron": n["neuron"],
            "value": n["value"],
            "hurt": n["hurt_fire"],
            "example": n["example"],
            "windows": [[w["before"], w["fire"], w["next"]] for w in n["windows"]],
        }
        for n in data["rows"]
    ]
    assert len(shown) >= 1 and len(shown[0]["windows"]) == int(SMALL["top"])
    texts = page.eval_on_selector_all("#claims li .text", "els => els.map(e => e.textContent)")
    assert texts == [c["text"] for c in data["claims"]]


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("js", [False, True], ids=["js-off", "js-on"])
def test_the_ffn_memory_page_shows_the_api_numbers_and_follows_a_new_seed(open_page, api, lang, js):
    page = open_page("/explain/ffn-memory?" + urlencode({**SMALL, "lang": lang}), js=js)
    data = api("/api/explain/ffn-memory?" + urlencode({**SMALL, "lang": lang}))
    assert page.locator("#ffn-neurons-h").inner_text() == t("explain.ffn_memory.h.neurons", lang)
    check(page, data)
    if js:
        explain_update(page, lambda: page.fill("#p-seed", "3"))
    else:
        page.fill("#p-seed", "3")
        page.click("#explain-go")
        page.wait_for_url("**seed=3**")
        if page.locator("#training").count():  # new settings train first (202): the page reloads itself when done
            page.wait_for_selector("#results, #explain-error:not([hidden])")
    data = api("/api/explain/ffn-memory?" + urlencode({**SMALL, "seed": "3", "lang": lang}))
    check(page, data)

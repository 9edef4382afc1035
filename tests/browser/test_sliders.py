"""A topic's slider shows its value without JavaScript (issue 36, item 6): beside each slider a number field with
the same name, min, max and step carries the value. Without JS the number field is what the learner edits and
sends (the slider, which could not show its value, stays hidden); with JS the two follow each other. Either way a
GET of the form sends each parameter once, and the server's reading of it (the CLI line, the lesson's own
number) is the value asked for."""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from browser_support import explain_update
from results import quick_query

LAM = "/explain/rnn-gradients?" + urlencode({**quick_query("rnn-gradients"), "lang": "en"})  # λ: a float slider
PAIRS = """() => [...document.querySelectorAll('#explain-form input[type=range]:not(.log-slider)')].map(s => {
  const n = document.getElementById(s.id.replace(/-slider$/, ''));
  return {slider: s.id, sliderName: s.getAttribute('name'), hidden: s.hidden, visible: s.offsetParent !== null,
          type: n && n.type, name: n && n.name, same: ['min', 'max', 'step'].every(a => n && n.getAttribute(a) === s.getAttribute(a)),
          label: n && n.labels.length > 0};
})"""


def sent(page, name: str) -> list[str]:
    """The values of `name` in the page's query (its form's GET or explain.js's replaceState)."""
    return parse_qs(urlsplit(page.url).query).get(name, [])


def form_values(page, name: str) -> list[str]:
    return page.evaluate(f"() => new FormData(document.getElementById('explain-form')).getAll({name!r})")


@pytest.mark.parametrize("js", [False, True])
@pytest.mark.parametrize("path", [LAM, "/explain/positional?" + urlencode(quick_query("positional"))])
def test_every_slider_has_a_named_number_field_beside_it(open_page, path, js):
    page = open_page(path, js=js)
    pairs = page.evaluate(PAIRS)
    assert pairs, "the topic was chosen for its sliders"
    for p in pairs:
        assert p["type"] == "number" and p["name"] and p["same"] and p["label"], p
        assert p["sliderName"] is None, f"only the number field may send the value: {p}"
        assert p["visible"] == js and p["hidden"] == (not js), p  # a slider only where it can show its value
        assert form_values(page, p["name"]) == [page.input_value(f"#{p['slider'].removesuffix('-slider')}")]


def test_without_js_the_number_field_is_edited_and_sent_once(open_page, api):
    page = open_page(LAM, js=False)
    assert page.input_value("#p-lam") == "0.9"  # the default, shown as a number
    page.fill("#p-lam", "1.2")
    with page.expect_navigation():
        page.click("#explain-go")
    assert sent(page, "lam") == ["1.2"]  # one value, from the number field
    assert page.input_value("#p-lam") == "1.2"  # the page that comes back shows it
    assert page.get_attribute('[data-bind="chosen.lam"]', "data-value") == "1.2"  # the lesson ran at it
    assert "--lam 1.2" in page.inner_text("#explain-cli")
    query = {**quick_query("rnn-gradients"), "lam": "1.2", "lang": "en"}
    assert api("/api/explain/rnn-gradients?" + urlencode(query))["chosen"]["lam"] == 1.2


def test_with_js_the_slider_and_the_number_follow_each_other(open_page):
    page = open_page(LAM)
    assert page.input_value("#p-lam-slider") == page.input_value("#p-lam") == "0.9"
    page.focus("#p-lam-slider")
    explain_update(page, lambda: page.keyboard.press("ArrowRight"))  # one step: 0.9 -> 0.95
    assert page.input_value("#p-lam") == "0.95" and form_values(page, "lam") == ["0.95"]
    assert page.get_attribute('[data-bind="chosen.lam"]', "data-value") == "0.95" and sent(page, "lam") == ["0.95"]
    explain_update(page, lambda: page.fill("#p-lam", "1.5"))  # typed: the slider moves to it
    assert page.input_value("#p-lam-slider") == "1.5" and form_values(page, "lam") == ["1.5"]
    assert page.get_attribute('[data-bind="chosen.lam"]', "data-value") == "1.5" and sent(page, "lam") == ["1.5"]
    assert "--lam 1.5" in page.inner_text("#explain-cli")

"""A claim's three outcomes on the page, in a real Chromium, with JavaScript on and off and in both languages: the
mark (✓ ○ ✗), the status, the sentence and the comparison under it (control, margin, "not shown at these
settings") are the API's, and moving a slider re-renders them from the API's answer."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from browser_support import explain_update

MARKS = {"shown": "✓", "not_shown": "○", "contradicted": "✗"}
ITEMS = """() => [...document.querySelectorAll('#claims li')].map(li => [li.dataset.id, li.dataset.status,
  li.querySelector('.claim-mark').textContent, li.querySelector('.text').textContent,
  (li.querySelector('.versus') || {textContent: ''}).textContent])"""


def expected(data) -> list:
    return [[c["id"], c["status"], MARKS[c["status"]], c["text"], c["versus"]] for c in data["claims"]]


@pytest.mark.parametrize("js", [True, False], ids=["js", "no-js"])
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_shown_not_shown_and_contradicted_read_the_same_as_the_api(open_page, api, lang, js):
    # 128 keys: the course's "the gradient fades" is contradicted at d_k = 64; at d_k = 1 nothing saturates.
    query = {"n_samples": "1000", "n_keys": "128", "d_k": "64", "lang": lang}
    page = open_page("/explain/sqrt-dk?" + urlencode(query), js=js)
    data = api("/api/explain/sqrt-dk?" + urlencode(query))
    assert page.evaluate(ITEMS) == expected(data)
    assert {c["status"] for c in data["claims"]} == {"shown", "contradicted"}
    word = "与说法相反" if lang == "zh" else "contradicted"
    assert word in page.locator('#claims li[data-status="contradicted"] .versus').text_content()

    if js:
        explain_update(page, lambda: page.locator("#p-d_k-slider").fill("0"))  # log2 scale: d_k = 1
    else:
        page = open_page("/explain/sqrt-dk?" + urlencode({**query, "d_k": "1"}), js=False)
    data = api("/api/explain/sqrt-dk?" + urlencode({**query, "d_k": "1"}))
    assert page.evaluate(ITEMS) == expected(data)
    not_shown = page.locator('#claims li[data-status="not_shown"]')
    assert not_shown.count() >= 1 and "claim not-shown" in not_shown.first.get_attribute("class")
    word = "在这些设置下未能证实" if lang == "zh" else "not shown at these settings"
    assert word in not_shown.first.locator(".versus").text_content()

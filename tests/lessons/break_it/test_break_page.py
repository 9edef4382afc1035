"""The break-it page in Chromium, JavaScript on and off, zh and en: choose an ablation in the form, run it, and
see both models' loss curves on one chart, the numbers table and the claims, all the API's numbers."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from browser_support import explain_update

from attnlab.i18n import t

# Test-sized, as the other tests of the topic (their runs are cached in this process and shared).
SMALL = {"train_steps": "40", "seeds": "3"}


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("js", [False, True], ids=["js-off", "js-on"])
def test_run_one_ablation_from_the_page_and_see_both_curves(open_page, api, lang, js):
    page = open_page("/explain/break?" + urlencode({**SMALL, "ablate": "ffn-only", "lang": lang}), js=js)
    assert page.locator("#break-chart-h").inner_text() == t("explain.break_it.h.chart", lang, n=3)
    if js:
        explain_update(page, lambda: page.select_option("#p-ablate", "no-causal-mask"))
    else:
        page.select_option("#p-ablate", "no-causal-mask")
        page.click("#explain-go")
        page.wait_for_url("**ablate=no-causal-mask**")
        if page.locator("#training").count():  # new settings train first (202): the page reloads itself when done
            page.wait_for_selector("#results, #explain-error:not([hidden])")
            page.wait_for_load_state("load")
    data = api("/api/explain/break?" + urlencode({**SMALL, "ablate": "no-causal-mask", "lang": lang}))
    assert data["ablation"] == "no-causal-mask"
    # both models' curves, train and causal, on the one chart: the lesson's own points
    lines = page.eval_on_selector_all("#break-chart polyline", "ls => ls.map(l => [l.id, l.getAttribute('points')])")
    assert lines == [[f"line-{x['name']}", x["points"]] for x in data["chart"]["lines"]]
    assert {x["name"] for x in data["chart"]["lines"]} == {
        "intact_train",
        "intact_causal",
        "ablated_train",
        "ablated_causal",
    }
    assert all(len(points.split()) == len(data["steps_at"]) for _, points in lines)
    box = page.locator("#break-chart").bounding_box()
    assert box["width"] > 200 and box["height"] > 80  # drawn, not collapsed
    # the numbers over the seeds, the sentence, the claims
    rows = page.eval_on_selector_all(
        "#break-table tbody tr",
        "rs => rs.map(r => [...r.querySelectorAll('[data-value]')].map(c => Number(c.dataset.value)))",
    )
    assert rows == [
        [r["train_mean"], r["train_std"], r["causal_mean"], r["causal_std"], r["causal_min"], r["causal_max"]]
        for r in data["table"]
    ]
    assert page.locator("#break-finding").inner_text() == data["finding"]
    claims = page.eval_on_selector_all("#claims li", "lis => lis.map(li => [li.dataset.id, li.dataset.holds])")
    assert claims == [[c["id"], str(c["holds"]).lower()] for c in data["claims"]] and all(
        c["holds"] for c in data["claims"]
    )
    greedy = page.eval_on_selector_all(  # each text, and where a broken model departs from its intact twin, marked
        "#break-greedy tbody tr",
        "rs => rs.map(r => [r.querySelector('td.greedy').innerText, r.querySelector('mark').innerText])",
    )
    assert greedy == [[r["greedy"], r["departs"]] for r in data["runs"]]
    assert page.locator("#break-greedy-note").inner_text() == data["greedy_note"]
    assert page.locator("#p-ablate option:checked").inner_text() == t("explain.choice.ablate.no-causal-mask", lang)

"""The seq2seq page in Chromium, JavaScript on and off, zh and en: the accuracy chart, the attention heatmaps with
the true alignment boxed, and the alignment of a string the learner types."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from browser_support import explain_update, follow_training

from attnlab.i18n import t

SMALL = {
    "train_steps": "100",
    "n_test": "5",
    "n_seeds": "1",
    "text": "2026",
}  # as the other explain tests: one training, cached

CELLS = """(id) => [...document.querySelectorAll(`#${id} tbody tr`)].map(tr =>
  [...tr.querySelectorAll('td')].map(td => [Number(td.dataset.value), td.classList.contains('truth')]))"""


def check_maps(page, data) -> None:
    """The Bahdanau and head-averaged maps are the API's weights, and the boxed cells are the true alignment."""
    ex = data["example"]
    for table, weights in (("alpha-map", ex["bahdanau"]), ("cross-map", ex["transformer"])):
        cells = page.evaluate(CELLS, table)
        assert [[v for v, _ in row] for row in cells] == weights
        assert [[j for j, (_, boxed) in enumerate(row) if boxed] for row in cells] == [[j] for j in ex["truth"]]
    heads = page.locator("#head-maps .head-card table")
    assert heads.count() == len(data["heads"])
    assert page.locator("#head-maps td.truth").count() == len(data["heads"]) * len(ex["truth"])
    for name in ("no_attention", "bahdanau", "transformer"):
        assert (
            page.locator(f'#prediction-{name} [data-bind="example.prediction.{name}"]').inner_text()
            == ex["prediction"][name]
        )
    assert page.locator('[data-bind="example.source"]').inner_text() == ex["source"]


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("js", [False, True], ids=["js-off", "js-on"])
def test_chart_heatmaps_and_a_typed_alignment(open_page, api, lang, js):
    page = open_page("/explain/seq2seq?" + urlencode({**SMALL, "lang": lang}), js=js)
    data = api("/api/explain/seq2seq?" + urlencode({**SMALL, "lang": lang}))
    assert page.locator("#align-h").inner_text() == t("explain.seq2seq.h.alignment", lang)
    assert page.evaluate("() => document.getElementById('explain-figure').naturalWidth") > 0
    rows = page.eval_on_selector_all(
        "#accuracy-table tbody tr",
        "rows => rows.map(r => [...r.querySelectorAll('[data-value]')].map(c => Number(c.dataset.value)))",
    )
    assert [r[0] for r in rows] == data["lengths"]
    assert [r[1] for r in rows] == data["accuracy"]["no_attention"] and [r[3] for r in rows] == data["accuracy"][
        "transformer"
    ]
    check_maps(page, data)
    assert page.locator('#suggestions [data-bind="suggestions"]').inner_text() == " · ".join(data["suggestions"])

    typed = "31415"
    if js:
        explain_update(page, lambda: page.fill("#p-text", typed))
    else:
        page.fill("#p-text", typed)
        page.click("#explain-go")
        page.wait_for_url(f"**text={typed}**")
        follow_training(page)  # its null's models (trained on shuffled targets) may train for the new text
    data = api("/api/explain/seq2seq?" + urlencode({**SMALL, "text": typed, "lang": lang}))
    assert data["example"]["source"] == typed and len(data["example"]["bahdanau"]) == len(typed)
    check_maps(page, data)
    assert f"text={typed}" in page.locator("#explain-figure").get_attribute("src")
    page.wait_for_function("() => document.getElementById('explain-figure').complete")
    assert page.evaluate("() => document.getElementById('explain-figure').naturalWidth") > 0

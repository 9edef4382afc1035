"""/real in Chromium, JavaScript on and off, zh and en: type a sentence, see the grid, open one head."""

from __future__ import annotations

import pytest
from real_support import need_minilm

SENTENCE = "The cat sat on the mat because it was tired."


@pytest.fixture(scope="module", autouse=True)
def warm():
    """Load the model and measure the head patterns before the first page asks (the server shares this process)."""
    need_minilm()
    from attnlab.lessons.real import lesson as real

    real.real_model()
    real.head_patterns()
    for lang in ("zh", "en"):
        real.coreference(lang)


def coref_counts(page, api, lang: str) -> None:
    """The coreference counts as the API gives them: unrounded, ties apart, chance, the first noun, the pairs."""
    co = api(f"/api/real/coreference?lang={lang}")
    for case in co["cases"]:
        count = page.inner_text(f"#coref-{case['id']} .coref-count")
        assert all(str(case[k]) in count for k in ("n_prefer_implied", "n_prefer_other", "n_ties"))
        chance = page.inner_text(f"#coref-{case['id']} .coref-chance")
        assert str(case["chance_needed"]) in chance and str(case["n_prefer_first"]) in chance
    for pair in co["pairs"]:
        text = page.inner_text(f"#pair-{pair['id']}")
        assert str(pair["switched_with"]) in text and str(pair["kept_first"]) in text
    assert page.inner_text("#coref-finding") == co["finding"]
    statuses = page.locator("#coref-claims li").evaluate_all("lis => lis.map(li => li.dataset.status)")
    assert (
        statuses == [c["status"] for c in co["claims"]] and len(statuses) == 6
    )  # the three pairs: a flip and a meaning claim each


def grid_and_head(page, api, lang: str, click) -> None:
    tokens = api(f"/api/real?text={SENTENCE.replace(' ', '+')}")["tokens"]
    assert page.locator("#real-tokens .tok").all_inner_texts() == tokens
    assert page.locator("#real-grid button.mini").count() == 72
    click("#map-2-5")
    page.wait_for_selector("#head-map")
    assert "pick=2.5" in page.url
    want = api(f"/api/real?text={SENTENCE.replace(' ', '+')}&layer=2&head=5")["detail"]
    rows = page.locator("#head-map tbody tr")
    assert rows.count() == len(tokens)
    shown = [
        float(v) for v in page.locator("#head-map tbody td").evaluate_all("tds => tds.map(td => td.dataset.value)")
    ]
    assert shown == [x for row in want["weights"] for x in row]
    assert page.locator("#contrib-map tbody tr").count() == len(tokens)
    assert page.get_attribute("#map-2-5", "aria-pressed") == "true"
    head = page.inner_text("#head-h")
    assert ("第 2 层" in head) if lang == "zh" else ("Layer 2" in head)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_js_on_type_a_sentence_see_the_grid_open_a_head(open_page, live_update, api, artifacts, lang):
    page = open_page(f"/real?lang={lang}")
    page.fill("#real-text", SENTENCE)
    live_update(page, lambda: page.click("#real-go"))
    assert page.input_value("#real-text") == SENTENCE
    grid_and_head(page, api, lang, lambda sel: live_update(page, lambda: page.click(sel)))
    page.fill("#emb-word", "paris")
    live_update(page, lambda: page.click("#emb-go"))
    assert (
        page.locator("#emb-near tbody td").first.inner_text()
        == api("/api/real/embeddings?word=paris")["neighbours"][0]["token"]
    )
    assert page.locator("#head-map").count() == 1  # the chosen head stays open
    coref_counts(page, api, lang)
    page.screenshot(path=str(artifacts / f"real-{lang}.png"), full_page=True)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_js_off_plain_forms_and_links(open_page, api, lang):
    page = open_page(f"/real?lang={lang}", js=False)
    page.fill("#real-text", SENTENCE)
    with page.expect_navigation():
        page.click("#real-go")

    def click(sel):
        with page.expect_navigation():
            page.click(sel)

    grid_and_head(page, api, lang, click)
    coref_counts(page, api, lang)

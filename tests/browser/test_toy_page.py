"""The toy lab in a real Chromium: clicks, the mask, predictions and the hand calculation show the API's
numbers, with JavaScript and without; the keyboard reaches every control; a screenshot is saved."""

from __future__ import annotations

import pytest

TOKENS = ("猫", "追", "老鼠", "它")


def shown(text: str) -> float:
    return float(text.strip().replace("\u2212", "-").replace("∞", "inf"))


def table_values(page, table_id: str) -> list[list[float | None]]:
    rows = page.eval_on_selector_all(
        f"#{table_id} tbody tr",
        "rows => rows.map(r => [...r.querySelectorAll('td[data-value]')].map(c => c.dataset.value))",
    )
    return [[None if x == "null" else float(x) for x in r] for r in rows]


def table_texts(page, table_id: str) -> list[list[str]]:
    return page.eval_on_selector_all(
        f"#{table_id} tbody tr",
        "rows => rows.map(r => [...r.querySelectorAll('td[data-value]')].map(c => c.innerText))",
    )


def assert_lab_matches(page, api, query: str, causal: bool) -> None:
    lab = api(f"/api/toy?query={query}&causal={'true' if causal else 'false'}")
    for h, head in enumerate(lab["heads"], start=1):
        assert table_values(page, f"h{h}-A") == head["weights"]
        assert table_values(page, f"h{h}-S") == head["masked_scores"]
        assert table_values(page, f"h{h}-O") == head["output"]
        for texts, row in zip(table_texts(page, f"h{h}-A"), head["weights"]):
            assert [shown(x) for x in texts] == pytest.approx([round(x, 3) for x in row], abs=1e-9)
        chosen = page.locator(f"#h{h}-A tbody tr.sel")
        assert chosen.count() == 1 and chosen.locator("th").inner_text().strip().endswith(lab["query"])
    pressed = page.locator("#query-form button[aria-pressed=true]")
    assert pressed.count() == 1 and pressed.inner_text().startswith(lab["query"])
    assert page.locator("#causal").is_checked() == causal


def test_clicks_mask_predictions_and_hand_calculation(open_page, live_update, api, artifacts):
    page = open_page("/toy")
    assert page.locator("html").get_attribute("class") == "js"
    assert_lab_matches(page, api, "它", False)

    for pos, tok in enumerate(TOKENS, start=1):  # click each query
        live_update(page, lambda: page.click(f"#q-{pos}"))
        assert_lab_matches(page, api, tok, False)
        assert page.evaluate("document.activeElement.id") == f"q-{pos}"  # focus stays on the clicked button

    live_update(page, lambda: page.check("#causal"))  # the causal mask
    assert_lab_matches(page, api, "它", True)
    assert "causal=1" in page.url
    assert page.locator("#lab-announce").inner_text() == page.locator("#lab-status").inner_text()  # read out
    assert page.locator("#h1-S td.masked").count() == 6 and page.locator("#h1-A td.masked").count() == 6
    live_update(page, lambda: page.click("#q-3"))
    assert_lab_matches(page, api, "老鼠", True)
    assert table_texts(page, "h1-A")[2][3] == "0" and table_texts(page, "h1-S")[2][3] == "\u2212∞"

    # predict, commit, and only then see the verdict
    assert page.locator("#verdict-future").count() == 0
    page.check("#ans-future-yes")
    assert page.locator("#verdict-future").count() == 0
    live_update(page, lambda: page.click("#commit-future"))
    verdict = api("/api/toy/check?question=future&answer=yes")
    assert "wrong" in page.locator("#verdict-future").get_attribute("class") and not verdict["correct"]
    page.check("#ans-keys-4")
    live_update(page, lambda: page.click("#commit-keys"))
    assert "right" in page.locator("#verdict-keys").get_attribute("class")
    page.check("#ans-heads-no")
    live_update(page, lambda: page.click("#commit-heads"))
    assert "猫" in page.locator("#verdict-heads").inner_text() and "追" in page.locator("#verdict-heads").inner_text()

    # edit v2 and watch delta_o = a_2 delta_v2
    live_update(page, lambda: page.fill("#in-v2y", "4"))
    hand = api("/api/toy/hand", {"scores": ["0", "ln 3"], "values": [["2", "0"], ["0", "4"]]})
    out = page.eval_on_selector_all("#hand-output [data-value]", "els => els.map(e => Number(e.dataset.value))")
    assert out == hand["now"]["output"] == [0.5, 3.0]
    assert page.eval_on_selector_all("#hand-weights .fraction", "els => els.map(e => e.innerText)") == ["1/4", "3/4"]
    assert page.locator("#hand-dout").inner_text() == "(0, 1.5)" and hand["exact_delta_output"] == ["0", "3/2"]
    assert page.input_value("#in-v2y") == "4" and "v2y=4" in page.url
    live_update(page, lambda: page.fill("#in-s2", "ln 4"))
    assert page.eval_on_selector_all("#hand-weights .fraction", "els => els.map(e => e.innerText)") == ["1/5", "4/5"]
    live_update(page, lambda: page.click("#preset-textbook"))
    assert page.input_value("#in-v2y") == "2" and page.input_value("#in-s2") == "ln 3"

    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=artifacts / "toy_lab_zh.png", full_page=True)


def test_without_javascript_the_forms_work(open_page, api, artifacts):
    page = open_page("/toy?lang=en", js=False)
    assert page.locator("#mask-go").is_visible() and page.locator("#hand-go").is_visible()
    assert_lab_matches(page, api, "它", False)
    page.click("#q-1")  # a plain GET: a page load
    assert_lab_matches(page, api, "猫", False)
    assert "lang=en" in page.url
    page.check("#causal")
    page.click("#mask-go")
    assert_lab_matches(page, api, "猫", True)
    assert table_values(page, "h1-A")[0] == [1.0, 0.0, 0.0, 0.0]  # position 1 reads one key
    page.check("#ans-keys-2")
    page.click("#commit-keys")
    assert "wrong" in page.locator("#verdict-keys").get_attribute("class")
    assert page.locator("#causal").is_checked()  # the rest of the state survived the form
    page.fill("#in-v2y", "4")
    page.click("#hand-go")
    assert page.locator("#hand-dout").inner_text() == "(0, 1.5)"
    page.click("#preset-textbook")
    assert page.input_value("#in-v2y") == "2"
    page.screenshot(path=artifacts / "toy_lab_en_nojs.png", full_page=True)


def test_keyboard_reaches_every_control(open_page, live_update):
    page = open_page("/toy")
    # A radio group is one Tab stop (the arrow keys move inside it), so radios count by group.
    name = "e => e.type === 'radio' ? 'radio:' + e.name : (e.id || e.name || e.href)"
    controls = set(
        page.eval_on_selector_all(
            "main button, main input:not([type=hidden]), main a[href]",
            f"els => els.filter(e => e.offsetParent !== null).map({name})",
        )
    )
    reached = set()
    for _ in range(len(controls) + 25):
        page.keyboard.press("Tab")
        reached.add(page.evaluate(f"({name})(document.activeElement)"))
    assert controls <= reached, controls - reached
    page.focus("#ans-keys-1")
    page.keyboard.press("ArrowRight")
    assert page.is_checked("#ans-keys-2")
    page.focus("#q-2")
    live_update(page, lambda: page.keyboard.press("Enter"))
    assert page.locator("#q-2").get_attribute("aria-pressed") == "true"
    page.focus("#causal")
    live_update(page, lambda: page.keyboard.press("Space"))
    assert page.locator("#causal").is_checked()


def test_language_switch_keeps_the_state(open_page):
    page = open_page("/toy?query=1&causal=1")
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    page.click("#lang-switch")
    assert page.locator("html").get_attribute("lang") == "en"
    assert "query=1" in page.url and "causal=1" in page.url and "lang=en" in page.url
    assert page.locator("#q-1").get_attribute("aria-pressed") == "true"
    page.click("nav a >> nth=1")
    assert "lang=en" in page.url and page.locator("h1").inner_text().startswith("Attention is a soft")


def test_lookup_and_ledger_pages(open_page, live_update, api):
    page = open_page("/lookup")
    live_update(page, lambda: page.click("#lh-2"))
    look = api("/api/lookup?query=它&head=2")
    weights = page.eval_on_selector_all("#soft-table td[data-value]", "els => els.map(e => Number(e.dataset.value))")
    assert weights == look["soft_weights"]
    page.click("#imp-answer summary")
    assert page.locator("#imp-table").is_visible()
    live_update(page, lambda: page.click("#lq-1"))
    assert page.locator("#imp-table").is_visible()  # an opened answer stays open across updates
    page = open_page("/ledger")
    live_update(page, lambda: page.fill("#in-n", "1024"))
    cost = api("/api/ledger?n=1024&d=4&h=2")["cost"]
    assert page.locator("#cost-total").get_attribute("data-value") == str(cost["total"])


def test_the_guard_blocks_outside_requests_and_hears_console_errors(chromium, lab_url, new_watch):
    """The watch every page runs under: a request off 127.0.0.1 is aborted and recorded, and so is an error."""
    watch = new_watch()
    context = chromium.new_context(base_url=lab_url, bypass_csp=True)  # the page's own CSP would refuse first
    try:
        watch.attach(context)
        page = context.new_page()
        page.on("console", lambda msg: watch.console_errors.append(msg.text) if msg.type == "error" else None)
        page.goto("/")
        outcome = page.evaluate("fetch('http://192.0.2.1/x.js').then(() => 'loaded', () => 'refused')")
        page.evaluate("console.error('made to fail')")
    finally:
        context.close()
    assert outcome == "refused" and watch.blocked == ["http://192.0.2.1/x.js"]
    assert any("made to fail" in e for e in watch.console_errors)
    assert len(watch.problems()) >= 2


def test_chips_choose_the_query_and_v2_asks_for_a_prediction_first(open_page, api):
    page = open_page("/toy", js=False)  # plain links and forms: the same works with JavaScript on
    page.click(".sentence a.chip >> text=老鼠")  # the sentence's chips are links choosing the query
    assert "query=" in page.url and page.get_attribute(".chip.is-query", "aria-current") == "true"
    assert page.inner_text(".chip.is-query .word") == "老鼠" and page.get_attribute("#q-3", "aria-pressed") == "true"

    # v2 = (0, 4) is shown only through the prediction form: no result before a choice is committed
    assert page.locator("#v2-verdict").count() == 0 and page.locator("#hand-compare").count() == 0
    assert page.locator('#v2-predict-form input[name="v2_guess"][required]').count() == 3
    page.check("#v2-guess-all")
    page.click("#preset-v2")
    page.wait_for_selector("#v2-verdict")
    assert "v2y=4" in page.url and "query=" in page.url  # the chosen query is kept
    assert "wrong" in page.get_attribute("#v2-verdict", "class")  # o moves by a2 dv2 = (0, 1.5), not (0, 2)
    hand = api("/api/toy/hand", {"scores": ["0", "ln 3"], "values": [["2", "0"], ["0", "4"]]})
    assert page.inner_text("#hand-dout") == "(0, 1.5)" and hand["delta_output"] == [0.0, 1.5]
    # the old and the new output side by side
    assert page.locator("#hand-compare svg").count() == 2
    captions = page.locator("#hand-compare figcaption").all_inner_texts()
    assert "(0.5, 1.5)" in captions[0] and "(0.5, 3)" in captions[1]

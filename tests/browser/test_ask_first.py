"""Every topic is a lesson (issue 36), in a real browser, zh and en, JavaScript on and off: the page asks its
question first, shows nothing measured until the learner answers, then says right or wrong with the run's own
numbers (the sentence the Python core wrote, word for word), and puts the figure before the first table; each
claim carries its null's line (lessons/common/nulls.py), as the core measured it. With
JavaScript the answers are remembered in the browser and the home page's course map marks them.

Each topic is opened at its QUICK settings: the suite's shared store holds those results and their figures (drawn
once for every test that shows them: tests/browser/test_explain_pages.py opens the same pages)."""

from urllib.parse import urlencode

import pytest
from results import explained, quick_query, result

from attnlab.i18n import t
from attnlab.lessons.explain import TOPICS

FIGURE_FIRST = """() => {
  const figure = document.querySelector('#figure-card'), table = document.querySelector('#results table');
  return !!figure && (!table || !!(figure.compareDocumentPosition(table) & Node.DOCUMENT_POSITION_FOLLOWING));
}"""


def _wrong(topic, answer: str) -> str:
    return next(o for o in topic.options if o != answer)


def _answer(page, option: str, js: bool) -> None:
    page.check(f"#predict-{option}")
    if js:
        page.evaluate(
            "() => { window.__explained = false; document.addEventListener('explain:updated', "
            "() => { window.__explained = true; }, {once: true}); }"
        )
        page.click("#reveal-go")
        page.wait_for_function("() => window.__explained === true")
    else:
        with page.expect_navigation():
            page.click("#reveal-go")


WIDE = """() => document.documentElement.scrollWidth - window.innerWidth"""  # > 0: the page scrolls sideways


@pytest.mark.parametrize("js", [True, False], ids=["js-on", "js-off"])
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_topic_asks_first_then_says_right_or_wrong_and_shows_the_figure_first(open_page, lang, js):
    """Without JavaScript at a phone's width (390 px), with it at a desktop's: each state fits its width."""
    width = 1300 if js else 390
    page = open_page("/?" + urlencode({"lang": lang}), js=js, viewport={"width": width, "height": 900})
    for name, topic in TOPICS.items():
        r = result(name, lang=lang, **topic.quick)
        answer = topic.answer(r).option
        page.goto(f"/explain/{name}?" + urlencode({**quick_query(name), "lang": lang}))
        if page.locator("#training").count():  # a first visit trains: the page reloads itself with the results
            page.wait_for_selector("#ask")
        assert page.locator("#ask").is_visible(), name
        assert page.inner_text("#ask-q").strip() == t(f"explain.{topic.slug}.ask.q", lang), name
        options = page.locator("#ask input[name=predict]")
        assert options.count() == len(topic.options), name
        for hidden in ("[data-results]", "#figure-card", "#claims-card", "#verdict"):
            assert page.locator(hidden).is_hidden(), f"{name}: {hidden} shows before an answer"
        assert page.evaluate(WIDE) <= 0, f"{name}: the question scrolls sideways at {width} px"
        pick = _wrong(topic, answer) if (js or lang == "en") else answer
        _answer(page, pick, js)
        expected = topic.verdict(r, pick, lang)
        verdict = page.locator("[data-verdict]")
        assert verdict.is_visible(), name
        assert verdict.get_attribute("data-correct") == str(expected["correct"]).lower(), name
        assert page.inner_text("[data-verdict-head]").strip() == expected["head"], name
        assert page.inner_text("[data-verdict-why]").strip() == expected["why"], name
        key = page.locator("[data-verdict-why] mark.key")  # the number that carries the lesson, marked
        assert key.count() == 1 and key.inner_text() == expected["key_text"], name
        assert key.get_attribute("data-key") == expected["key"], name
        assert page.locator("[data-results]").is_visible() and page.locator("#figure-card").is_visible(), name
        assert page.evaluate(FIGURE_FIRST), f"{name}: a table comes before the figure"
        assert page.evaluate(WIDE) <= 0, f"{name}: the answered page scrolls sideways at {width} px"
        lines = page.eval_on_selector_all(  # each claim's null on its line, as the core measured it
            "#claims .claim",
            "items => items.map(li => [li.dataset.id, li.querySelector('.null')?.textContent ?? null])",
        )
        nulls = {c.id: c.null and c.null["line"] for c in explained(name, lang, **topic.quick).claims}
        assert dict(lines) == nulls, name
        if js:  # a second answer, the right one: the verdict follows, without a reload
            _answer(page, answer, js)
            assert verdict.get_attribute("data-correct") == "true", name
            assert page.inner_text("[data-verdict-head]").strip() == topic.verdict(r, answer, lang)["head"], name
    page.goto("/?" + urlencode({"lang": lang}))
    marks = page.locator("#map [data-topic] [data-mark]:not([hidden])")
    if js:  # the last answer of each topic was right
        assert marks.count() == len(TOPICS) and set(page.locator("#map .map-mark.right").all_inner_texts()) == {"✓"}
    else:
        assert marks.count() == 0  # nothing is remembered without a script (and nothing on the server)

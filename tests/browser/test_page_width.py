"""Every page fits a phone (390 px) and a desktop (1280 px) without sideways scrolling, in zh and en.

The pages come from the app itself (its GET page routes, /explain/{topic} once per registered topic), so a
page or topic added later is checked without touching this file. A wide table may scroll inside its own box;
the document may not: `document.documentElement.scrollWidth <= innerWidth`. One browser context per language
(JS on) loads each page once and measures it at both widths; a spot check with JS off follows. Topics run at
the test-sized settings of test_explain_pages.py (the same cached results; the layout rules are general), with
their question answered, so the verdict and every result are measured; tests/browser/test_ask_first.py measures
each topic before and after the answer without JavaScript at 390 px.
"""

from __future__ import annotations

import time
import typing
from urllib.parse import urlencode

import pytest
from fastapi.responses import RedirectResponse
from test_explain_pages import SMALL  # test-sized settings per topic (every topic has one there)

from attnlab.lessons.explain import TOPICS
from attnlab.web.app import create_app
from attnlab.web.options import _routes

WIDTHS = (1280, 390)
JS_OFF_SPOT = ("/toy", "/pipeline", "/explain/multihead?" + urlencode(SMALL["multihead"]))

MEASURE = """() => {
  const w = window.innerWidth, out = [];
  for (const e of document.querySelectorAll('main *')) {
    const r = e.getBoundingClientRect();
    if (r.right > w + 1 && !out.some(o => o.el.contains(e))) out.push({el: e, right: Math.round(r.right)});
  }
  return {width: document.documentElement.scrollWidth, view: w,
          culprits: out.slice(0, 3).map(o => `${o.el.tagName.toLowerCase()}#${o.el.id}.${o.el.className} ${o.right}px`)};
}"""


def redirects(route) -> bool:
    """A route declared to answer only a redirect (its endpoint's return annotation)."""
    try:
        answer = typing.get_type_hints(route.endpoint).get("return")
    except (AttributeError, NameError, TypeError):
        return False
    return isinstance(answer, type) and issubclass(answer, RedirectResponse)


def page_paths() -> list[str]:
    """Every HTML page the lab serves: GET routes left out of the OpenAPI schema that answer HTML (a short
    address that only redirects, such as /seq2seq, is its target's page), without a file suffix."""
    paths = []
    for route in _routes(create_app().routes):
        path = getattr(route, "path", "")
        if (
            "GET" not in (getattr(route, "methods", None) or ())
            or getattr(route, "include_in_schema", True)
            or redirects(route)
            or path.startswith(("/api", "/static", "/openapi"))
            or "." in path.rsplit("/", 1)[-1]
        ):
            continue
        if path == "/explain/{topic}":  # answered, so its results (figure, claims, tables) are measured too
            paths += [
                f"/explain/{name}?{urlencode({**SMALL[name], 'predict': TOPICS[name].options[0]})}" for name in TOPICS
            ]
        elif "{" not in path:
            paths.append(path)
    return paths


def test_the_page_list_covers_lessons_and_topics():
    paths = page_paths()
    assert {"/", "/toy", "/pipeline", "/explain"} <= set(paths)
    assert sorted(p.split("?")[0].removeprefix("/explain/") for p in paths if p.startswith("/explain/")) == sorted(
        TOPICS
    )
    assert len(paths) == len(set(paths))


def overflow(page, path: str, widths=WIDTHS) -> list[str]:
    """'path @ width: scrollWidth > width (culprits)' for each width the page does not fit."""
    found = []
    for width in widths:
        page.set_viewport_size({"width": width, "height": 900})
        m = page.evaluate(MEASURE)
        if m["width"] > m["view"]:
            found.append(f"{path} @ {width}px: scrollWidth {m['width']} ({'; '.join(m['culprits'])})")
    return found


def settled(page, patience_ms: float) -> None:
    """The page as it stays: a lesson that trains answers its first visit with its progress (202), and the page
    reloads itself when the result is ready (on a loaded machine the lesson may not be computed yet)."""
    if page.locator("#training").count():
        page.wait_for_selector("#results, #explain-error:not([hidden])", timeout=patience_ms)
        page.wait_for_load_state("load")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_page_fits_phone_and_desktop(open_page, patience_ms, lang):
    suffix = "" if lang == "zh" else "lang=en"
    page = open_page("/?" + suffix, viewport={"width": WIDTHS[0], "height": 900})
    problems, seconds = [], {}
    for path in page_paths():
        start = time.perf_counter()
        page.goto(f"{path}{'&' if '?' in path else '?'}{suffix}".rstrip("?"), timeout=patience_ms)
        settled(page, patience_ms)
        assert page.locator("main").count() == 1, path
        problems += overflow(page, path)
        seconds[path] = round(time.perf_counter() - start, 1)
    print("seconds per page:", sorted(seconds.items(), key=lambda kv: -kv[1])[:6])  # shown with -rP
    assert not problems, "pages scroll sideways:\n" + "\n".join(problems)


def test_pages_fit_a_phone_without_javascript(open_page, patience_ms):
    page = open_page("/", js=False, viewport={"width": 390, "height": 900})
    problems = []
    for path in JS_OFF_SPOT:
        page.goto(path, timeout=patience_ms)
        settled(page, patience_ms)
        problems += overflow(page, path, widths=(390,))
    assert not problems, "pages scroll sideways:\n" + "\n".join(problems)

"""The static site's states (attnlab.web.export.states, attnlab.web.export.axes): the pages a learner reaches by
clicking what the lab's forms offer are rendered ahead of time and linked; /toy's three parts are rendered one
at a time, so its pages add up (1 + the sum of each part's states less one) instead of multiplying, a count
read here from the page's own controls; what needs the live lab says so. Uses the command's default export,
shared by every export test (tests/exported_site_support.py); tests/test_export_site.py checks that every
page of it, states included, is what the live lab renders for its URL."""

from __future__ import annotations

import math
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

import pytest
from exported_site_support import export_report, exported_site
from fastapi.testclient import TestClient

from attnlab.i18n import t
from attnlab.lessons.explain import TOPICS
from attnlab.web.app import create_app
from attnlab.web.export import axes
from attnlab.web.export import site as export
from attnlab.web.export import states as export_states

pytestmark = pytest.mark.slow  # exports the whole static site

ADDED = re.compile(r'\n?<p class="note static-links".*?</p>|\n?<p class="note warn" id="static-copy".*?</p>', re.S)


class Page(HTMLParser):
    """Tags with attributes, ids, every data-value in order and the visible words."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.values: list[str] = []
        self.words: list[str] = []
        self._skip = 0
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        self._skip += tag in ("script", "style", "template")
        if "data-value" in a:
            self.values.append(a["data-value"])

    def handle_endtag(self, tag):
        self._skip -= tag in ("script", "style", "template")

    def handle_data(self, data):
        if not self._skip and data.strip():
            self.words.append(" ".join(data.split()))

    def first(self, tag: str, **match) -> dict:
        return next(a for name, a in self.tags if name == tag and all(a.get(k) == v for k, v in match.items()))

    def text_of(self, text: str, id_: str) -> str:
        return re.sub(r"<[^>]+>|\s+", "", text.split(f'id="{id_}"', 1)[1].split("</", 1)[0].split(">", 1)[1])


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return exported_site(tmp_path_factory)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict:
    return export_report(tmp_path_factory)["trained"]


@pytest.fixture(scope="module")
def live():
    with TestClient(create_app()) as client:
        yield client


def follow(site: Path, file: str, tag: str, **match) -> str:
    """The site file the link (an <a> with these attributes) on `file` leads to."""
    href = Page((site / file).read_text(encoding="utf-8")).first(tag, **match)["href"]
    target = (site / file).parent / unquote(urlsplit(href).path)
    assert target.is_file(), href
    return target.resolve().relative_to(site.resolve()).as_posix()


def state_of(file: str) -> dict[str, str]:
    """The query an exported page was rendered for, from its name (toy~causal=1~query=_E7_8C_AB.html)."""
    pairs = [p.split("=", 1) for p in Path(file).name[: -len(".html")].split("~")[1:]]
    return {k: unquote(re.sub(r"_([0-9A-F]{2})", r"%\1", v)) for k, v in pairs}


def offered(text: str) -> dict[str, set[str]]:
    """Every value each query key of /toy can take from the page's own controls: a radio's values or none,
    a checkbox on or off, a named button's values (a preset stands for the boxes it fills), a text box its
    value, a link to /toy its query's values; the default page as the live lab renders it."""
    values: dict[str, set[str]] = {}
    for tag, a in Page(text).tags:
        name, kind = a.get("name"), (a.get("type") or "").lower()
        if tag == "input" and name and kind != "hidden":
            extra = {"", a.get("value") or "on"} if kind in ("radio", "checkbox") else {a.get("value") or ""}
            values.setdefault(name, set()).update(extra)
        elif tag == "button" and name:
            values.setdefault(name, set()).add(a.get("value") or "")
        elif tag == "a" and urlsplit(a.get("href") or "").path == "/toy":
            for k, v in parse_qsl(urlsplit(a["href"]).query):
                if k != "lang":
                    values.setdefault(k, set()).add(v)
    return values


def test_toy_query_mask_answers_and_preset_are_links(site, live):
    assert follow(site, "toy.html", "a", id="q-1") == "toy~query=_E7_8C_AB.html"
    cat = (site / "toy~query=_E7_8C_AB.html").read_text(encoding="utf-8")
    assert Page(cat).first("a", id="q-1")["aria-current"] == "page"
    masked = follow(site, "toy~query=_E7_8C_AB.html", "a", **{"class": "switch"})
    assert masked == "toy~causal=1~query=_E7_8C_AB.html"
    assert 'id="mask-note"' in (site / masked).read_text(encoding="utf-8")
    assert follow(site, masked, "a", **{"class": "switch"}) == "toy~query=_E7_8C_AB.html"  # and off again
    for answer, right in (("4", True), ("2", False)):
        page = follow(site, "toy.html", "a", href=f"toy~ans_keys={answer}.html")
        text = (site / page).read_text(encoding="utf-8")
        assert f'class="verdict {"right" if right else "wrong"}" id="verdict-keys"' in text
        assert "checked" in Page(text).first("input", id=f"ans-keys-{answer}")
    # The preset is a redirect in the lab; the copy links where it lands, with the v2 edit's result.
    landed = follow(site, "toy.html", "a", id="preset-v2")
    assert landed.startswith("toy~v2y=4") and live.get("/toy?preset=v2_04", follow_redirects=False).is_redirect
    assert 'id="hand-dout"' in (site / landed).read_text(encoding="utf-8")
    note = Page((site / "toy.html").read_text(encoding="utf-8")).first("p", id="static-states")
    assert note["role"] == "note"
    # Typed numbers need the live lab: the boxes and the compute button stay off.
    toy = Page((site / "toy.html").read_text(encoding="utf-8"))
    assert "disabled" in toy.first("input", id="in-s1") and "disabled" in toy.first("button", id="hand-go")


def test_toy_pages_are_one_part_at_a_time_and_as_many_as_its_controls_make(site, live):
    """/toy's controls, read from the page the live lab renders, give each part's states (the product of its
    keys' values); the copy has 1 + the sum of (a part's states - 1) pages a language, each with at most one
    part away from its defaults, and every value of every control is on one of them."""
    for lang, prefix in (("zh", ""), ("en", "en/")):
        text = live.get("/toy", params={"lang": lang}).text
        sections, values = axes.parts(text), offered(text)
        assert set(sections.values()) == {"predict", "hand", "lab"} and set(values) == set(sections)
        by_part: dict[str, list[str]] = {}
        for key, part in sections.items():
            by_part.setdefault(part, []).append(key)
        states = {part: math.prod(len(values[k]) for k in keys) for part, keys in by_part.items()}
        files = [p.relative_to(site).as_posix() for p in (site / prefix).glob("toy*.html")]
        assert len(files) == 1 + sum(n - 1 for n in states.values()), (lang, states)
        shown: dict[str, set[str]] = {k: set() for k in values}
        for file in files:
            state = state_of(file)
            assert len({sections[k] for k in state}) <= 1, file  # one part away from the defaults
            for key in values:
                shown[key].add(state.get(key, ""))
        for key in ("query", "causal", "v2_guess", *(k for k in values if k.startswith("ans_"))):
            assert values[key] - {"它"} <= shown[key], key  # 它 is the default: the page with no query


def test_a_link_that_changes_two_parts_of_a_sectioned_page_is_refused():
    sections = {"query": "lab", "ans_keys": "predict"}
    source = (("query", "1"),)
    assert axes.narrow((("ans_keys", "4"), ("query", "1")), source, sections) == (("ans_keys", "4"),)
    assert axes.narrow((("ans_keys", "4"), ("query", "2")), (("ans_keys", "4"),), sections) == (("query", "2"),)
    assert axes.narrow((), (("ans_keys", "4"), ("query", "1")), sections) == ()  # the plain /toy of the navigation
    assert axes.narrow(source, source, sections) == source  # the language switch keeps the state
    with pytest.raises(axes.TwoParts):
        axes.narrow((("ans_keys", "4"), ("query", "2")), source, sections)


def test_pipeline_shows_the_trained_model_and_its_generations(site, trained):
    assert trained["corpus"] == "poem" and trained["seed"] == 0 and trained["steps"] > 0
    run = follow(site, "pipeline.html", "a", href="pipeline~run=poem.html")
    text = (site / run).read_text(encoding="utf-8")
    assert t("export.states.trained.link", "zh") in text
    links = [a["href"] for tag, a in Page(text).tags if tag == "a" and "prompt=" in (a.get("href") or "")]
    assert len(links) == len(export_states.GENERATIONS)
    shown = set()
    for href in links:
        page = (site / unquote(href)).read_text(encoding="utf-8")
        generated = Page(page).text_of(page, "gen-text")
        assert generated.startswith(trained["prompt"]) and len(generated) > len(trained["prompt"])
        shown.add(tuple(Page(ADDED.sub("", page)).words))
    assert len(shown) == len(links)  # each setting's page shows its own steps: candidates and probabilities


def test_explain_values_come_from_params_and_heavy_topics_say_so(site):
    text = (site / "explain/forms.html").read_text(encoding="utf-8")
    links = [
        a["href"].split("#")[0]
        for tag, a in Page(text).tags
        if tag == "a" and (a.get("href") or "").startswith("forms~")
    ]
    for p in TOPICS["forms"].params:
        for v in export_states.param_values(p):
            if p.name != "seed" and v != p.default:
                assert f"forms~{p.name}={v}.html" in links, (p.name, v)
    assert all((site / "explain" / unquote(h)).is_file() for h in links)
    for h in links:
        figure = Page((site / "explain" / h).read_text(encoding="utf-8")).first("img", id="explain-figure")["src"]
        assert (site / "explain" / unquote(figure)).read_bytes()[:4] == b"\x89PNG"
    for topic in export_states.HEAVY_TOPICS:  # its defaults only: its other files are the answers to its question
        heavy = (site / f"explain/{topic}.html").read_text(encoding="utf-8")
        others = [f.name for f in (site / "explain").glob(f"{topic}~*") if not f.name.startswith(f"{topic}~predict=")]
        assert 'id="static-values"' in heavy and not others, (topic, others)


def test_every_topic_asks_on_its_first_page_and_each_answer_is_a_page_with_its_verdict(site):
    for name, topic in TOPICS.items():
        first = Page((site / f"explain/{name}.html").read_text(encoding="utf-8"))
        assert first.first("section", id="ask") is not None and "hidden" in first.first("div", id="results"), name
        for option in topic.options:
            answered = (site / f"explain/{name}~predict={option}.html").read_text(encoding="utf-8")
            verdict = Page(answered).first("div", id="verdict")
            assert "hidden" not in verdict and verdict.get("data-correct") in ("true", "false"), (name, option)
            assert "hidden" not in Page(answered).first("div", id="results"), (name, option)


def test_param_values_stay_in_range_and_on_the_step():
    for tp in TOPICS.values():
        for p in tp.params:
            values = export_states.param_values(p)
            assert p.default in values
            if p.kind in ("int", "float") and p.lo is not None:
                assert all(p.lo <= v <= p.hi for v in values), (tp.name, p.name, values)
                assert all(p.parse(str(v)) == v for v in values), (tp.name, p.name)


def test_states_false_keeps_the_frozen_copy(monkeypatch):
    text = '<form method="get" action="/toy"><button type="submit" name="query" value="猫">猫</button></form>'
    assert export_states.form_choices(text, "/toy") == {text.index("<button"): "/toy?query=%E7%8C%AB"}
    page = export.static_page(f"<main>{text}</main>", "/toy", "zh", lambda target: None)
    assert "<button" in page and "disabled" in page and "href" not in page


def test_a_real_link_loop_is_still_refused(monkeypatch):
    """A page that links an ever new URL of itself trips the guard, whatever the states do."""
    from fastapi import FastAPI
    from fastapi.responses import HTMLResponse

    import attnlab.web.app as web_app

    loop = FastAPI()

    @loop.get("/", response_class=HTMLResponse)
    def home(n: int = 0):
        return f'<html><body><main><a href="/?n={n + 1}">next</a></main></body></html>'

    monkeypatch.setattr(web_app, "create_app", lambda: loop)
    monkeypatch.setattr(export, "MAX_FILES", 40)
    with pytest.raises(export.ExportError, match="link loop"):
        export.render_site(("zh",), states=False)

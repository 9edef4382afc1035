"""The static site's states (attnlab.web.export.states): the pages a learner reaches by clicking what the lab's
forms offer are rendered ahead of time and linked, each one what the live lab answers for that URL; what
needs the live lab says so. Uses the test-sized export of tests/export_states_support.py."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlencode, urlsplit

import pytest
from fastapi.testclient import TestClient

from attnlab.web.export import site as export
from attnlab.web.export import states as export_states
from attnlab.i18n import t
from attnlab.lessons.explain import TOPICS
from attnlab.web.app import create_app
from export_states_support import small_site

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
def exported(tmp_path_factory):
    return small_site(tmp_path_factory)


@pytest.fixture(scope="module")
def site(exported) -> Path:
    return exported[0]


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


def live_url(file: str, run: str) -> str:
    name, *pairs = file[: -len(".html")].split("~")
    query = [p.split("=", 1) for p in pairs]
    query = [(k, unquote(re.sub(r"_([0-9A-F]{2})", r"%\1", v))) for k, v in query]
    query = [(k, run if k == "run" else v) for k, v in query]
    return f"/{'' if name == 'index' else name}" + (f"?{urlencode(query)}" if query else "")


def test_every_state_page_is_what_the_live_lab_renders_for_its_url(site, exported, live):
    report = exported[1]
    states = [p for p in report.pages if "~" in p and not p.startswith("ledger")]
    assert len(states) >= 25
    for file in states:
        text = (site / file).read_text(encoding="utf-8")
        served = live.get(live_url(file, report.trained.run))
        assert served.status_code == 200, file
        shown, want = Page(ADDED.sub("", text)), Page(served.text)
        assert shown.values == want.values, file  # every number, in order
        if not file.startswith("explain/"):  # (the small export lists two topics in the topics' menu)
            assert shown.words == want.words, file  # every text: a control that became a link keeps its words
        assert "<script" not in text
        for tag, a in shown.tags:  # every control left is off; forms send nothing
            assert tag not in ("input", "button", "select", "textarea") or "disabled" in a or a.get("type") == "hidden"
            assert tag != "form" or not {"action", "method"} & set(a), file


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


def test_pipeline_shows_the_trained_model_and_its_generations(site, exported):
    report = exported[1]
    assert report.trained.corpus == "poem" and report.trained.seed == 0 and report.trained.steps > 0
    run = follow(site, "pipeline.html", "a", href="pipeline~run=poem.html")
    text = (site / run).read_text(encoding="utf-8")
    assert t("export.states.trained.link", "zh") in text
    links = [a["href"] for tag, a in Page(text).tags if tag == "a" and "prompt=" in (a.get("href") or "")]
    assert len(links) == len(export_states.GENERATIONS)
    shown = set()
    for href in links:
        page = (site / unquote(href)).read_text(encoding="utf-8")
        generated = Page(page).text_of(page, "gen-text")
        assert generated.startswith(report.trained.prompt) and len(generated) > len(report.trained.prompt)
        shown.add(tuple(Page(ADDED.sub("", page)).words))
    assert len(shown) == len(links)  # each setting's page shows its own steps: candidates and probabilities


def test_explain_values_come_from_params_and_heavy_topics_say_so(site):
    text = (site / "explain/forms.html").read_text(encoding="utf-8")
    links = [a["href"] for tag, a in Page(text).tags if tag == "a" and (a.get("href") or "").startswith("forms~")]
    for p in TOPICS["forms"].params:
        for v in export_states.param_values(p):
            if p.name != "seed" and v != p.default:
                assert f"forms~{p.name}={v}.html" in links, (p.name, v)
    assert all((site / "explain" / unquote(h)).is_file() for h in links)
    for h in links:
        figure = Page((site / "explain" / h).read_text(encoding="utf-8")).first("img", id="explain-figure")["src"]
        assert (site / "explain" / unquote(figure)).read_bytes()[:4] == b"\x89PNG"
    heavy = (site / "explain/norms.html").read_text(encoding="utf-8")
    assert 'id="static-values"' in heavy and not list((site / "explain").glob("norms~*"))


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

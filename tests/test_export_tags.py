"""The export's tag scan (web/export/tags.py) reads what Python's html.parser reads: the same start tags with the
same attributes and places, the same end tags, button/label closes and script spans, on pages the lab renders and
on generated markup (comments, raw text, entities, unquoted and valueless attributes, unfinished tags), where the
scan hands over to html.parser whenever it meets markup it does not follow."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.web.app import create_app
from attnlab.web.export.tags import Tags, Unusual

PAGES = ["/", "/toy", "/lookup", "/ledger", "/explain", "/explain/forms?predict=a", "/explain/glossary"]


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app()) as c:
        yield c


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_lab_s_pages_are_scanned_as_html_parser_reads_them(client, lang):
    for path in PAGES:
        page = client.get(path, params={"lang": lang}, headers={"accept": "text/html"})
        assert page.status_code == 200, path
        scanned = Tags.scanned(page.text)  # no hand-over: the lab's markup is what the scan follows
        assert scanned == Tags.parsed(page.text), path
        assert scanned.tags and scanned.ends, path


NAMES = st.sampled_from(["a", "p", "div", "button", "label", "input", "span", "B", "svg", "script", "style", "br"])
ATTR_NAMES = st.sampled_from(["id", "href", "class", "data-x", "checked", "VALUE", "aria-current", "x:y"])
VALUES = st.text(alphabet="ab <>&;=/'\"\n猫#x3c", max_size=8)


@st.composite
def attribute(draw) -> str:
    name, value = draw(ATTR_NAMES), draw(VALUES)
    form = draw(st.sampled_from(["bare", "double", "single", "none", "spaced"]))
    if form == "none":
        return name
    if form == "double":
        return f'{name}="{value.replace(chr(34), "&quot;")}"'
    if form == "single":
        return f"{name}='{value.replace(chr(39), '&#39;')}'"
    if form == "spaced":
        return f'{name} = "{value.replace(chr(34), "")}"'
    return f"{name}={''.join(c for c in value if c not in chr(34) + chr(39) + ' <>') or 'v'}"


@st.composite
def piece(draw) -> str:
    kind = draw(st.sampled_from(["text", "start", "end", "closed", "comment", "doctype", "raw", "odd"]))
    name = draw(NAMES)
    attrs = " ".join(draw(st.lists(attribute(), max_size=3)))
    space = " " if attrs else ""
    if kind == "text":
        return draw(st.text(alphabet="ab 猫&;<>3\n", max_size=6))
    if kind == "start":
        return f"<{name}{space}{attrs}>"
    if kind == "end":
        return f"</{name}{draw(st.sampled_from(['', ' ', ' x']))}>"
    if kind == "closed":
        return f"<{name}{space}{attrs}/>"
    if kind == "comment":
        return f"<!--{draw(st.text(alphabet='ab<>-', max_size=5))}-->"
    if kind == "doctype":
        return draw(st.sampled_from(["<!DOCTYPE html>", "<!doctype html>", "<?xml v?>", "<!bogus>"]))
    if kind == "raw":
        raw = draw(st.sampled_from(["script", "style", "SCRIPT"]))
        inner = draw(st.sampled_from(["", "a<b>c", "if (a < b) {}", "'</scr'+'ipt>'", "<!-- x -->"]))
        return f"<{raw}>{inner}</{raw}>"
    return draw(st.sampled_from(["<", "<3", "< a>", "</>", "<![CDATA[x]]>", "<a href='x", "<!--", "<p", "</p"]))


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.lists(piece(), max_size=12))
def test_generated_markup_is_read_as_html_parser_reads_it(pieces):
    text = "".join(pieces)
    try:
        scanned = Tags.scanned(text)
    except Unusual:  # handed over: Tags.of reads it with html.parser itself
        scanned = None
    reference = Tags.parsed(text)
    if scanned is not None:
        assert scanned == reference, text
    assert Tags.of(text) == reference, text

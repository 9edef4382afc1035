"""`attnlab export-site DIR`: every page in both languages, every reference resolving inside the folder,
nothing that calls a server, the same numbers as the live lab, and a folder that is written whole or not
at all. The site is the command's default export, states included, made once per run and shared by every
export test (tests/exported_site_support.py)."""

from __future__ import annotations

import functools
import json
import os
import re
from collections import deque
from dataclasses import asdict
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlencode, urlsplit

import numpy as np
import pytest
from exported_site_support import export_report, exported_site, lesson_cache
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.i18n import t
from attnlab.lessons.common import disk_cache
from attnlab.lessons.explain import TOPICS, as_dict
from attnlab.lessons.toy.lesson import toy_lab
from attnlab.web import runs
from attnlab.web.app import create_app
from attnlab.web.export import site as export
from attnlab.web.nav import LESSONS

pytestmark = pytest.mark.slow  # exports the whole static site

URL_ATTRS = {"href", "src", "srcset", "action", "formaction", "poster", "data"}
NAMESPACE = re.compile(r'xmlns(:\w+)?="http://www\.w3\.org/[^"]*"')
# What the copy adds to a page (attnlab.web.export.states): notes of links to its states, what needs the live lab.
ADDED = re.compile(r'\n?<p class="note static-links".*?</p>', re.S)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return exported_site(tmp_path_factory)


@pytest.fixture(scope="module")
def live(site, tmp_path_factory):
    """The live lab, on the disk cache the export left (a restarted lab's view): the same lesson results, so the
    comparison checks that the copy shows what the lab shows without training every lesson a second time."""
    with disk_cache.using(lesson_cache()), TestClient(create_app()) as client:
        yield client


@pytest.fixture(scope="module")
def live_runs(tmp_path_factory, live) -> dict[str, str]:
    """{'poem': the id by which this process's lab knows the model the export trained}: the export's own run
    when this process exported, else the same seeded training asked of the live lab, as the export asks it."""
    trained = export_report(tmp_path_factory)["trained"]
    if trained["pid"] == os.getpid() and runs.RUNS.get(trained["run"]) is not None:
        return {trained["corpus"]: trained["run"]}
    started = live.post("/api/train", json={"corpus": trained["corpus"]})
    assert started.status_code == 202, started.text
    runs.RUNS.get(started.json()["id"]).wait()
    return {trained["corpus"]: started.json()["id"]}


# data-bind paths of measured times, and of what is divided by one (scale's days on this machine): they differ run to run
WORDS = {"null": float("nan"), "true": 1.0, "false": 0.0}  # table cells that are not numbers, as numbers
CLOCK = re.compile(r"seconds|time_slope|flops_per_s|days_here")


class Page(HTMLParser):
    """What a test needs from a page: every attribute by tag, the ids, the text, the tables' data-values.
    A measured time (an element whose data-bind is a CLOCK path) is kept apart: `clock` has its path."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.ids: set[str] = set()
        self.words: list[str] = []
        self.values: list[str] = []
        self.tables: dict[str, list[float]] = {}
        self._table: str | None = None
        self.clock: list[str] = []
        self._skip = 0
        self._clock: str | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if a.get("id"):
            self.ids.add(a["id"])
        if tag in ("script", "style", "template"):
            self._skip += 1
        if tag == "table":
            self._table = a.get("id")
        if CLOCK.search(a.get("data-bind") or "") or "data-clock" in a:  # data-clock: a time within a sentence
            self._clock = tag
            self.clock.append(a.get("data-bind") or a["data-clock"])
            return
        if "data-value" in a:
            self.values.append(a["data-value"])
            if tag == "td" and self._table:
                value = a["data-value"]  # 'null': a masked score of /toy's causal pages; true/false: a yes/no cell
                self.tables.setdefault(self._table, []).append(WORDS[value] if value in WORDS else float(value))

    def handle_endtag(self, tag):
        if tag == self._clock:
            self._clock = None
        if tag in ("script", "style", "template"):
            self._skip -= 1
        if tag == "table":
            self._table = None

    def handle_data(self, data):
        if not self._skip and not self._clock and data.strip():
            self.words.append(" ".join(data.split()))

    def first(self, tag: str, **match) -> dict[str, str | None]:
        return next(a for name, a in self.tags if name == tag and all(a.get(k) == v for k, v in match.items()))


def read(path: Path) -> Page:
    return Page(path.read_text(encoding="utf-8"))


@functools.cache
def ids_of(path: Path) -> frozenset[str]:
    """The ids of a site file, read once (a page is the target of many references)."""
    return frozenset(read(path).ids)


def css_stays_inside(css: Path) -> bool:
    """A style sheet of the copy names no other site and imports nothing; its url()s (the web font) are files
    of the copy, relative to the sheet."""
    text = css.read_text(encoding="utf-8")
    if re.search(r"@import|https?://", text):
        return False
    return all((css.parent / url).is_file() for url in re.findall(r"""url\(\s*["']?([^"')]+)["']?\s*\)""", text))


def pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def live_url(site: Path, file: Path, run_ids: dict[str, str] | None = None) -> str:
    """The lab URL an exported page was rendered from (the inverse of the layout in attnlab.web.export.site):
    values are decoded (_XX is a byte), a run named by its corpus gets its id from `run_ids`."""
    rel = file.relative_to(site).as_posix()
    lang = "zh"
    if rel.startswith("en/"):
        lang, rel = "en", rel[3:]
    name, *pairs = rel[: -len(".html")].split("~")
    path = "/" if name == "index" else f"/{name}"
    query = [p.split("=", 1) for p in pairs]
    query = [(k, unquote(re.sub(r"_([0-9A-F]{2})", r"%\1", v))) for k, v in query]
    query = [(k, (run_ids or {}).get(v, v) if k == "run" else v) for k, v in query]
    query += [("lang", "en")] if lang == "en" else []
    return f"{path}?{urlencode(query)}" if query else path


def check_references(site: Path) -> int:
    """Every href/src in every file points to a file of the site (and an anchor that is there); nothing is
    absolute or leaves for another host. Returns how many references were checked."""
    checked = 0
    for file in pages(site):
        text = file.read_text(encoding="utf-8")
        assert not re.search(r"https?://", NAMESPACE.sub("", text)), f"{file}: an absolute http(s) URL"
        page = Page(text)
        for tag, attrs in page.tags:
            for name, value in attrs.items():
                if name not in URL_ATTRS or value is None:
                    continue
                checked += 1
                parts = urlsplit(value)
                where = f"{file.relative_to(site)}: <{tag} {name}={value!r}>"
                assert not parts.scheme and not parts.netloc and not value.startswith("/"), where
                assert not parts.query, where
                if not parts.path:  # #anchor on this page
                    assert parts.fragment in page.ids, where
                    continue
                target = (file.parent / unquote(parts.path)).resolve()
                assert target.is_file(), where
                assert site.resolve() in target.parents, where
                if parts.fragment:
                    assert parts.fragment in ids_of(target), where
    for css in site.rglob("*.css"):
        assert css_stays_inside(css), css
    return checked


# ---- what is there -----------------------------------------------------------------------------------


def test_every_lesson_and_topic_is_there_in_both_languages(site):
    names = ["index", *(lesson.slug for lesson in LESSONS), *(f"explain/{name}" for name in TOPICS)]
    for lang, prefix in (("zh", ""), ("en", "en/")):
        for name in names:
            page = read(site / f"{prefix}{name}.html")
            assert page.first("html")["lang"] == ("zh-CN" if lang == "zh" else "en"), name
            banner = re.sub(r"\s", "", t("export.banner", lang, cmd="attnlab serve"))
            assert banner in re.sub(r"\s", "", "".join(page.words)), (lang, name)
            assert page.first("p", id="static-copy")["role"] == "note"
        for name in TOPICS:
            assert (site / f"{prefix}explain/{name}/figure.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert json.loads((site / f"{prefix}api/explain/{name}.json").read_text(encoding="utf-8"))["claims"]
    for slug in ("toy", "lookup", "ledger", "pipeline", "explain"):
        assert json.loads((site / f"api/{slug}.json").read_text(encoding="utf-8"))


def test_every_reference_resolves_inside_the_site(site):
    assert check_references(site) > 600


def test_every_page_is_reached_by_links_and_the_language_switch_pairs_pages(site):
    start = (site / "index.html").resolve()
    reached, todo = {start}, deque([start])
    while todo:
        file = todo.popleft()
        for tag, attrs in read(file).tags:
            href = attrs.get("href")
            if tag == "a" and href and urlsplit(href).path:
                target = (file.parent / unquote(urlsplit(href).path)).resolve()
                if target.suffix == ".html" and target not in reached:
                    reached.add(target)
                    todo.append(target)
    assert reached == {p.resolve() for p in pages(site)}
    for file in pages(site):
        rel = file.relative_to(site).as_posix()
        other = rel[3:] if rel.startswith("en/") else f"en/{rel}"
        switch = read(file).first("a", id="lang-switch")["href"]
        assert (file.parent / unquote(switch)).resolve() == (site / other).resolve(), rel


def test_nothing_in_the_copy_calls_a_server(site):
    assert not list(site.rglob("*.js"))
    for file in pages(site):
        page = read(file)
        for tag, attrs in page.tags:
            assert tag != "script", file
            if tag == "form":
                assert "action" not in attrs and "method" not in attrs, file
            if tag in ("input", "button", "select", "textarea") and attrs.get("type") != "hidden":
                assert "disabled" in attrs, (file, tag, attrs.get("id"))


# ---- the same numbers as the lab ---------------------------------------------------------------------


def test_every_page_shows_what_the_live_lab_shows(site, live, live_runs):
    numbers = clocks = 0
    for file in pages(site):
        url = live_url(site, file, live_runs)
        response = live.get(url)
        if response.status_code == 202 and url.startswith("/explain/"):
            # this worker's lab has not trained that lesson yet (the site may have been exported by another
            # worker): the API waits for the training the page started, then the page answers from the cache
            assert live.get("/api" + url).status_code == 200, url
            response = live.get(url)
        assert response.status_code == 200, url
        served = Page(response.text)
        lang = served.first("html")["lang"][:2]
        shown = Page(ADDED.sub("", file.read_text(encoding="utf-8").replace(export.banner(lang), "", 1)))
        assert shown.values == served.values, url  # every number's exact value, in order
        assert shown.words == served.words, url  # and every text, the numbers as printed
        assert shown.clock == served.clock, url  # the same clock readings, in the same places
        numbers += len(shown.values)
        clocks += bool(shown.clock) and "~predict=" not in file.name  # an answer's page is its topic's page again
    assert (
        numbers > 2000 and clocks == 12
    )  # complexity, serial-vs-parallel, break, scale, flash and data-parallel, zh and en


def test_the_toy_page_weights_are_softmax_of_the_exported_scores(site):
    data = json.loads((site / "api/toy.json").read_text(encoding="utf-8"))
    assert data == json.loads(json.dumps(asdict(toy_lab("它"))))
    page = read(site / "toy.html")
    for i, head in enumerate(data["heads"], start=1):
        Q, K = np.array(head["Q"]), np.array(head["K"])
        S = Q @ K.T / np.sqrt(Q.shape[1])
        A = np.exp(S - S.max(axis=1, keepdims=True))
        A /= A.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(page.tables[f"h{i}-A"], A.ravel(), rtol=1e-12, atol=1e-12)


def test_explain_json_and_figures_are_the_lessons(site, live):
    for lang, prefix in (("zh", ""), ("en", "en/")):
        for name in ("sqrt-dk", "glossary"):
            data = json.loads((site / f"{prefix}api/explain/{name}.json").read_text(encoding="utf-8"))
            assert data == json.loads(json.dumps(as_dict(TOPICS[name].explained(lang=lang))))  # with the nulls
        figure = live.get("/explain/forms/figure.png", params={"lang": lang}).content
        assert (site / f"{prefix}explain/forms/figure.png").read_bytes() == figure


# ---- the command and its folder ----------------------------------------------------------------------


def test_cli_one_language_puts_it_at_the_root_and_hides_the_switch(tmp_path, monkeypatch):
    # Two quick topics are enough to check the layout (and break, which the pipeline page links to).
    import attnlab.web.course_map as course_map
    import attnlab.web.pages.explain as explain_pages

    few = {k: TOPICS[k] for k in ("forms", "glossary", "break")}
    monkeypatch.setattr(explain_pages, "TOPICS", few)
    monkeypatch.setattr(course_map, "TOPICS", few)  # the course map links the same topics, and not /scale (whose
    monkeypatch.setattr(
        course_map, "PAGES", {p: v for p, v in course_map.PAGES.items() if p != "/scale"}
    )  # topic is out)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["export-site", "site", "--lang", "en", "--no-states"])
    assert result.exit_code == 0, result.output
    assert "pages" in result.output and "index.html" in result.output
    site = tmp_path / "site"
    assert not (site / "en").exists()
    home = read(site / "index.html")
    assert home.first("html")["lang"] == "en"
    switch = home.first("a", id="lang-switch")
    assert "href" not in switch and "hidden" in switch
    assert (site / "explain/forms/figure.png").is_file() and (site / "api/explain/glossary.json").is_file()
    assert sorted(p.name for p in site.glob("*.html")) == sorted(
        [
            "index.html",
            *(f"{lesson.slug}.html" for lesson in LESSONS),
            *(p.name for p in site.glob("ledger~*")),
            *(p.name for p in site.glob("toy~*")),
            *(p.name for p in site.glob("lookup~*")),
        ]
    )  # toy~: the sentence chips link each query; lookup~: its importance card links the toy's own cases
    check_references(site)
    assert not [p for p in tmp_path.iterdir() if p.name != "site"]  # no temporary folder left


def test_cli_refuses_a_folder_that_is_not_empty_or_a_file(tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    (full / "notes.txt").write_text("mine")
    result = CliRunner().invoke(app, ["export-site", str(full)])
    assert result.exit_code == 1
    assert "is not empty" in result.output and "--force" in result.output and "Traceback" not in result.output
    assert [p.name for p in full.iterdir()] == ["notes.txt"]
    result = CliRunner().invoke(app, ["export-site", str(full / "notes.txt")])
    assert result.exit_code == 1 and "is not a folder" in result.output
    result = CliRunner().invoke(app, ["export-site", str(tmp_path), "--lang", "fr"])
    assert result.exit_code == 2 and "fr" in result.output


def test_force_never_replaces_the_folder_you_stand_in(tmp_path, monkeypatch):
    (tmp_path / "inside").mkdir()
    monkeypatch.chdir(tmp_path / "inside")
    for folder in (tmp_path, tmp_path / "inside"):
        (folder / "keep.txt").write_text("mine")
        with pytest.raises(export.ExportError, match="refusing to replace"):
            export.check_destination(folder, force=True)
    result = CliRunner().invoke(app, ["export-site", ".", "--force"])
    assert result.exit_code == 1 and "refusing" in result.output


def test_force_replaces_the_whole_folder(tmp_path, monkeypatch):
    small = {"index.html": b"<!doctype html><title>new</title>", "en/index.html": b"<!doctype html>"}
    monkeypatch.setattr(export, "render_site", lambda langs, progress=None, states=True: (small, export.Report(Path())))
    out = tmp_path / "site"
    out.mkdir()
    (out / "stale.html").write_text("old")
    result = CliRunner().invoke(app, ["export-site", str(out), "--force"])
    assert result.exit_code == 0, result.output
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert written == ["en/index.html", "index.html"]
    assert [p.name for p in tmp_path.iterdir()] == ["site"]


def test_a_failed_write_leaves_the_folder_as_it_was(tmp_path, monkeypatch):
    out = tmp_path / "site"
    export.write_site(out, {"index.html": b"first"})
    files = {f"page{i}.html": b"second" for i in range(5)}
    real, calls = Path.write_bytes, []

    def flaky(self, data):
        calls.append(self)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", flaky)
    with pytest.raises(OSError, match="No space"):
        export.write_site(out, files, force=True)
    monkeypatch.undo()
    assert [p.name for p in out.iterdir()] == ["index.html"] and (out / "index.html").read_bytes() == b"first"
    assert [p.name for p in tmp_path.iterdir()] == ["site"]
    with pytest.raises(export.ExportError, match="relative path inside"):
        export.write_site(tmp_path / "other", {"../escape.html": b"x"})
    assert not (tmp_path / "other").exists() and not (tmp_path / "escape.html").exists()


def test_a_failed_render_writes_nothing(tmp_path, monkeypatch):
    real, seen = export.static_page, []

    def broken(*args, **kwargs):
        seen.append(args[1])
        if len(seen) == 2:
            raise RuntimeError("a template broke")
        return real(*args, **kwargs)

    monkeypatch.setattr(export, "static_page", broken)
    monkeypatch.setattr(export, "target_of", lambda url, base="/": None)  # just the two home pages
    with pytest.raises(RuntimeError, match="template broke"):
        export.export_site(tmp_path / "site")
    assert os.listdir(tmp_path) == []


def test_the_copy_carries_the_labs_chinese_font_and_its_licence(site):
    """fonts.css names the web font by url(): the copy follows it, so Chinese shows on a machine without a
    Chinese font over file:// too (tests/browser/test_font.py checks the font is used), with the OFL beside it."""
    from importlib.resources import files

    fonts = files("attnlab.web").joinpath("static", "fonts")
    sheet = (site / "static" / "fonts.css").read_text(encoding="utf-8")
    named = re.findall(r'url\("fonts/([^"]+\.woff2)"\)', sheet)  # the web font's slices, each a face
    assert named and named[0] == "AttnlabCJK-00.woff2"
    for name in (*named, "OFL.txt"):
        assert (site / "static" / "fonts" / name).read_bytes() == fonts.joinpath(name).read_bytes(), name

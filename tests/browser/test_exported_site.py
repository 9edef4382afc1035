"""The exported static site (`attnlab export-site`) in Chromium: served by Python's http.server on a
loopback port, and opened from file://. Every lesson in the navigation is clicked in both languages, the
language switch goes both ways, and every page shows the static-copy banner with its controls disabled,
loads its styles and figure, logs no console error and asks nothing of any other host.

(Named test_exported_site.py: tests/test_export_site.py has the other basename, and two test modules of
one basename cannot be collected together in this suite's import mode.)"""

from __future__ import annotations

import functools
import re
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from exported_site_support import exported_site

from attnlab.i18n import t
from attnlab.web.nav import LESSONS

CONTROLS_ON = "input:not([type=hidden]):enabled, button:enabled, select:enabled, textarea:enabled"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The command's default site, exported once per run (shared by every export test)."""
    return exported_site(tmp_path_factory)


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@pytest.fixture(scope="module")
def host(site):
    """http://127.0.0.1:PORT/ serving the exported folder with Python's own static file server."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture
def open_site(chromium, new_watch, patience_ms):
    """open_site(url, allowed) -> a watched page: a console error, an uncaught exception, a failed or
    non-200 response, or a request that `allowed(url)` refuses fails the test."""
    opened = []

    def _open(url: str, allowed):
        context = chromium.new_context(viewport={"width": 1300, "height": 900})
        context.set_default_timeout(patience_ms)
        watch = new_watch()

        watch.attach(context, allowed)  # what it refuses is recorded (and fails: tests/browser_fixtures.py)
        page = context.new_page()
        page.on("console", lambda msg: watch.console_errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda err: watch.page_errors.append(str(err)))
        # A click that navigates cancels what the old page was still loading (its favicon, say): Chromium
        # reports that as ERR_ABORTED. A missing file is still caught, as a 404 or ERR_FILE_NOT_FOUND.
        page.on(
            "requestfailed",
            lambda req: (
                None
                if "ERR_ABORTED" in (req.failure or "")
                else watch.page_errors.append(f"failed: {req.url} {req.failure}")
            ),
        )
        page.on(
            "response",
            lambda resp: watch.page_errors.append(f"{resp.status}: {resp.url}") if resp.status >= 400 else None,
        )
        opened.append((context, watch))
        page.goto(url)
        return page

    yield _open
    problems = [p for _, watch in opened for p in watch.problems()]
    for context, _ in opened:
        context.close()
    assert not problems, "the exported site misbehaved:\n" + "\n".join(problems)


def check_static_page(page, lang: str) -> None:
    """The banner, the language, the styles and no control that would call a server."""
    assert page.get_attribute("html", "lang") == ("zh-CN" if lang == "zh" else "en")
    banner = page.locator("#static-copy")
    assert banner.is_visible()
    assert " ".join(banner.inner_text().split()) == " ".join(t("export.banner", lang, cmd="attnlab serve").split())
    assert page.evaluate("() => getComputedStyle(document.querySelector('header.top')).display") == "flex"
    assert page.locator(CONTROLS_ON).count() == 0
    assert page.locator("script").count() == 0


def click_to(page, selector: str, url: str) -> None:
    page.locator(selector).first.click()
    page.wait_for_url(url)


def nav_to(page, title: str, url: str) -> None:
    """Click the lesson called `title` in the navigation bar and wait for its page."""
    page.locator("header nav a").filter(has_text=re.compile(f"^{re.escape(title)}$")).click()
    page.wait_for_url(url)


def test_every_lesson_in_both_languages_over_http(open_site, host):
    page = open_site(host + "index.html", lambda url: urlsplit(url).hostname == "127.0.0.1")
    for lang, prefix in (("zh", ""), ("en", "en/")):
        check_static_page(page, lang)
        for lesson in LESSONS:
            nav_to(page, t(lesson.title_key, lang), f"{host}{prefix}{lesson.slug}.html")
            check_static_page(page, lang)
            assert page.locator("header nav a[aria-current=page]").inner_text() == t(lesson.title_key, lang)
            assert page.locator("main h1").count() == 1
        click_to(page, "#topic-sqrt-dk", f"{host}{prefix}explain/sqrt-dk.html")
        check_static_page(page, lang)
        assert page.locator("#ask").is_visible() and page.locator("#results").is_hidden()  # the question first
        click_to(page, "#ask a:has(#predict-b)", f"{host}{prefix}explain/sqrt-dk~predict=b.html#ask")  # an answer
        check_static_page(page, lang)
        assert page.get_attribute("#verdict", "data-correct") == "true" and page.locator("#results").is_visible()
        assert page.locator("#explain-figure").evaluate("img => img.complete && img.naturalWidth > 300")
        click_to(page, "a.brand", f"{host}{prefix}index.html")
        if lang == "zh":
            click_to(page, "#lang-switch", f"{host}en/index.html")
    click_to(page, "#lang-switch", f"{host}index.html")
    check_static_page(page, "zh")


def test_from_file_presets_language_switch_and_figures(open_site, site):
    root = site.as_uri() + "/"
    page = open_site(root + "en/toy.html", lambda url: url.startswith(root))
    check_static_page(page, "en")
    assert page.locator("#in-s1").is_disabled()  # typed numbers need the server (the choices are links)
    nav_to(page, t("toy.ledger.nav.title", "en"), root + "en/ledger.html")
    page.locator("#preset-gpt2").click()
    page.wait_for_load_state()
    assert unquote(page.url) == root + "en/ledger~d=768~h=12~n=1024.html"
    check_static_page(page, "en")
    assert page.locator("#in-n").input_value() == "1024" and page.locator("#in-h").input_value() == "12"
    click_to(page, "#lang-switch", page.url.replace("/en/", "/"))
    check_static_page(page, "zh")
    nav_to(page, t("explain.nav.title", "zh"), root + "explain.html")
    click_to(page, "#topic-glossary", root + "explain/glossary.html")
    click_to(page, "#ask a:has(#predict-a)", root + "explain/glossary~predict=a.html#ask")
    assert page.locator("#verdict").is_visible()
    assert page.locator("#explain-figure").evaluate("img => img.complete && img.naturalWidth > 300")
    assert page.locator("#quiz-1-go").is_disabled()

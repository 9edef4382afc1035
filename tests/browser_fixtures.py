"""Fixtures for real-browser tests: the lab on a free loopback port, Debian's Chromium through Playwright.

A plugin of the suite (tests/conftest.py loads it), so a lesson's page test can live with the lesson's other
tests (tests/lessons/<slug>/test_<slug>_page.py) as well as in tests/browser/. Use them like this:

    def test_my_page(open_page, live_update, api):
        page = open_page("/mine?lang=en")              # JS on; open_page("/mine", js=False) for JS off
        live_update(page, lambda: page.click("#go"))   # waits until lab.js has swapped the new page in
        cell = page.locator("#x td").first
        assert cell.get_attribute("data-value") == str(api("/api/mine")["x"][0][0])

Every page opened with `open_page` fails its test if the page logs a console error or an uncaught
exception, or if it tries to reach anything other than 127.0.0.1 (such requests fail: Chromium is started
with a proxy that is not there for every other host). A test that uses
Chromium (the `chromium` fixture, through `open_page` or directly) is marked `browser` and `slow`. Chromium
missing -> skipped with the reason, except under CI=true, where that fails.
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from browser_support import follow_training

CHROMIUM = os.environ.get("ATTNLAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # Nothing leaves 127.0.0.1: every other host goes through a proxy that is not there (the discard port), so
    # such a request fails at once; Chromium never proxies loopback. Watch records each attempt from the
    # request events, which cost the page nothing (intercepting every request with route() doubles a load).
    "--proxy-server=http://127.0.0.1:9",
]
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
# How long a wait may last before a test gives up. Generous on purpose: a wait ends on an event (a selector, a
# page's own signal), so this only guards against a hang; a busy CI machine (load 10) must not fail a test.
PATIENCE_MS = float(os.environ.get("ATTNLAB_TEST_PATIENCE_S", "300")) * 1000


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "chromium" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.slow)  # a real browser on a lab that computes


def unavailable(reason: str) -> None:
    """Skip, or fail under CI=true, where the browser tests must really run."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: the browser tests must run, so this is a failure)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def lab_url():
    """Base URL of the lab served by uvicorn in a background thread on a free 127.0.0.1 port."""
    from attnlab.web.server import background

    with background() as url:
        yield url


@pytest.fixture(scope="session")
def chromium():
    """A headless Chromium (Debian's /usr/bin/chromium) launched once per session."""
    if not Path(CHROMIUM).exists():
        unavailable(f"Chromium not found at {CHROMIUM} (install Debian's chromium package)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed (pip install -e '.[test]')")
    pw = sync_playwright().start()
    try:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    except Exception as err:  # noqa: BLE001 - any launch failure means: no browser here
        pw.stop()
        unavailable(f"Chromium at {CHROMIUM} did not start: {err}")
    yield PatientBrowser(browser)
    browser.close()
    pw.stop()


class PatientBrowser:
    """The browser, with every new context waiting PATIENCE_MS (not Playwright's 30 s) on navigations and selectors:
    a page that computes may take minutes on a loaded machine, and only a hang should fail a test."""

    def __init__(self, browser) -> None:
        self._browser = browser

    def new_context(self, **options):
        context = self._browser.new_context(**options)
        context.set_default_timeout(PATIENCE_MS)
        context.set_default_navigation_timeout(PATIENCE_MS)
        return context

    def __getattr__(self, name):
        return getattr(self._browser, name)


def local(url: str) -> bool:
    """A URL that stays on this machine's loopback (or inside the page)."""
    return url.startswith(("data:", "blob:", "about:")) or urlsplit(url).hostname == "127.0.0.1"


class Watch:
    """What a page did wrong: console errors, uncaught exceptions, requests that tried to leave 127.0.0.1."""

    def __init__(self) -> None:
        self.console_errors: list[str] = []
        self.page_errors: list[str] = []
        self.blocked: list[str] = []

    def attach(self, context, allowed=None) -> None:
        """Hear every request of the context: one that `allowed(url)` refuses (default: off 127.0.0.1) is
        recorded; CHROMIUM_ARGS's proxy makes it fail."""
        allowed = allowed or local
        context.on("request", lambda r: None if allowed(r.url) else self.blocked.append(r.url))

    def problems(self) -> list[str]:
        return (
            [f"console error: {e}" for e in self.console_errors]
            + [f"page error: {e}" for e in self.page_errors]
            + [f"request left 127.0.0.1: {u}" for u in self.blocked]
        )


@pytest.fixture(scope="session")
def patience_ms() -> float:
    """PATIENCE_MS, for a test that sets up its own browser context."""
    return PATIENCE_MS


@pytest.fixture
def new_watch():
    """The Watch class, for a test that sets up its own browser context."""
    return Watch


def with_answer(path: str) -> str:
    """/explain/<topic>?... with its question answered (its first choice) unless it already is."""
    from attnlab.lessons.explain import TOPICS

    parts = urlsplit(path)
    name = parts.path.removeprefix("/explain/")
    if not parts.path.startswith("/explain/") or name not in TOPICS or "predict=" in parts.query:
        return path
    query = "&".join(q for q in (parts.query, f"predict={TOPICS[name].options[0]}") if q)
    return f"{parts.path}?{query}" + (f"#{parts.fragment}" if parts.fragment else "")


@pytest.fixture
def open_page(chromium, lab_url):
    """open_page(path, js=True, **context_options) -> a Playwright Page on the lab, watched (see module doc)."""
    opened: list[tuple[object, Watch]] = []

    def _open(path: str = "/", *, js: bool = True, trained: bool = True, answered: bool = True, **options):
        """trained: a lesson page that first shows its models' training (a first visit) is followed until it has
        reloaded itself with the results (False: return the progress page as it is). answered: a topic's page
        opens with its question answered (?predict=, its first choice), so its results show; False: as a
        learner first sees it, the question alone (tests/browser/test_ask_first.py)."""
        path = with_answer(path) if answered else path
        options.setdefault("viewport", {"width": 1300, "height": 900})
        context = chromium.new_context(java_script_enabled=js, base_url=lab_url, **options)
        context.set_default_timeout(PATIENCE_MS)
        watch = Watch()
        watch.attach(context)
        page = context.new_page()
        page.on("console", lambda msg: watch.console_errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda err: watch.page_errors.append(str(err)))
        opened.append((context, watch))
        page.goto(path)
        if trained:  # the page reloads itself once trained
            follow_training(page)
        return page

    yield _open
    problems = [p for _, watch in opened for p in watch.problems()]
    for context, _ in opened:
        context.close()
    assert not problems, "the page misbehaved:\n" + "\n".join(problems)


@pytest.fixture
def live_update():
    """live_update(page, action): run action() (a click, a fill) and wait for lab.js to swap in the new page."""

    def _update(page, action) -> None:
        page.evaluate(
            "() => { window.__labUpdated = false; document.addEventListener('lab:updated', "
            "() => { window.__labUpdated = true; }, {once: true}); }"
        )
        action()
        page.wait_for_function("() => window.__labUpdated === true")

    return _update


@pytest.fixture(scope="session")
def api(lab_url):
    """api(path) -> the JSON the running lab answers to GET path; api(path, json_body) POSTs json_body."""

    def _get(path: str, json_body=None):
        data = None if json_body is None else json.dumps(json_body).encode()
        req = urllib.request.Request(
            lab_url + quote(path, safe="/?&=%+"), data=data, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=PATIENCE_MS / 1000) as resp:  # noqa: S310 - loopback only
            return json.loads(resp.read())

    return _get


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """The (gitignored) artifacts/ folder for screenshots."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS

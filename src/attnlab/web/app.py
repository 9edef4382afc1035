"""The lab's FastAPI app: `create_app()`.

Adding a page (a lesson called `demo`):
1. `web/pages/demo.py` defines `router = APIRouter()` with the page, `GET /demo`, returning
   `render(request, "demo.html", result=...)` (from `attnlab.web.render`), and its JSON API under
   `/api/demo...` returning the same lesson dataclass. Numbers come from a lesson function; never compute in
   the page or the template. Bad input: `raise unprocessable(loc, err, value)` (from `attnlab.web.errors`)
   on the API; on the page, show the message in the page.
2. The lesson's folder `attnlab/lessons/demo/` holds its page, `page.html` (rendered as "demo/page.html"),
   which starts with `{% extends "base.html" %}` and fills `{% block content %}`. Every string is
   `{{ t("demo.key") }}` with the key in the folder's `strings.json`; links are `url("/demo", x=1)` so the
   language is kept. `lessons/common/macros.html` has `matrix`, `heatmap`, `keep` (hidden state fields) and
   `vector_sum` (an SVG of a weighted sum). A page's own script or style goes in the folder's `static/` and
   is served at /static/NAME, beside the shared ones in web/static/ (names are unique across folders).
3. `web/nav.py`: one `Lesson("demo", "demo.nav.title", "demo.nav.summary")` line.
4. Below: one line `"attnlab.web.pages.demo",` in PAGES.
The page must be complete without JavaScript: plain GET forms. To update it without a reload, mark a
form `data-live` (and an input `data-auto` to send it on change; `data-announce="#id"` on the form to have
a screen reader read that element after an update): `static/lab.js` fetches the same page and swaps the
elements that carry `data-region` (the whole <main> by default), then fires `lab:updated`.
Scripts and styles are files, never inline (the Content-Security-Policy refuses inline scripts and
every request that leaves this server). Browser tests: add `tests/browser/test_demo.py` using the
fixtures in `tests/browser/conftest.py`.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import import_module
from pathlib import Path

from fastapi import Depends, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from attnlab import __version__
from attnlab.web import api_lang, errors, options, refusals
from attnlab.web.limits import LOCAL_HOSTS, MAX_BODY, TEST_HOSTS, RequestLimits
from attnlab.web.render import LESSONS_DIR, STATIC_DIR
from attnlab.web.warm_gate import InFlight

# One line per page module; each module exposes `router`.
PAGES = (
    "attnlab.web.pages.home",
    "attnlab.web.pages.toy",
    "attnlab.web.pages.lookup",
    "attnlab.web.pages.ledger",
    "attnlab.web.pages.train_api",
    "attnlab.web.pages.pipeline",
    "attnlab.web.pages.pipeline_checks",
    "attnlab.web.pages.explain",
    "attnlab.web.pages.real",
    "attnlab.web.pages.seq2seq",
    "attnlab.web.pages.runs",
    "attnlab.web.pages.sweeps",
)

# Everything the page loads comes from this server; styles may be inline attributes (heatmap cells).
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)


# same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` with the lab's own form
# posts, which the cross-site check (attnlab.web.limits) cannot tell from another site's.
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


class SecurityHeaders:
    """Adds SECURITY_HEADERS to every response that lacks them (pure ASGI: no task per request, streams untouched)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)


def lesson_statics() -> list[tuple[str, str]]:
    """The lessons' own static folders (lessons/<topic>/static/), served at /static/ after web/static/."""
    return [(f"attnlab.lessons.{d.parent.name}", "static") for d in sorted(LESSONS_DIR.glob("*/static")) if d.is_dir()]


def create_app(
    allowed_hosts: Iterable[str] | None = None,
    max_body: int = MAX_BODY,
    runs_dir: str | Path | None = None,
    data_dir: str | Path | None = None,
) -> FastAPI:
    """The lab: pages, JSON API (OpenAPI at /openapi.json), static files; no request leaves the server.

    `allowed_hosts`: the Host names it answers to besides localhost, 127.0.0.1 and ::1 (a server passes the
    address it is bound to; see `attnlab.web.limits`). None, for an app used in-process (tests, export-site),
    adds only "testserver", the name Starlette's TestClient sends. `max_body`: the largest request body (bytes).
    `runs_dir`: the folder of checkpoints /runs opens (`attnlab serve --runs`); None = none (the page says so).
    `data_dir`: the folder of corpora /scale (and word2vec's page) offers by name (`attnlab serve --data`); None = none.
    """
    # Swagger UI and ReDoc load their scripts from a CDN, so they stay off; /openapi.json is served.
    # Every API route refuses a lang other than zh or en (web/api_lang.py); pages fall back to Chinese instead.
    app = FastAPI(
        title="attnlab · 注意力实验室",
        version=__version__,
        docs_url=None,
        redoc_url=None,
        dependencies=[Depends(api_lang.refuse_unknown)],
    )
    errors.install(app)
    refusals.install(app)  # budget's refusals (403 another site, 422 too large, 503 busy or stopped)
    app.state.runs_dir = Path(runs_dir).expanduser().resolve() if runs_dir is not None else None
    app.state.data_dir = Path(data_dir).expanduser().resolve() if data_dir is not None else None
    options.install(app)  # OPTIONS anywhere: every method the routes serve there (inside the other middleware)
    hosts = TEST_HOSTS if allowed_hosts is None else tuple(allowed_hosts)
    app.add_middleware(RequestLimits, allowed_hosts=(*LOCAL_HOSTS, *hosts), max_body=max_body)
    app.mount("/static", StaticFiles(directory=STATIC_DIR, packages=lesson_statics()), name="static")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:
        return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")

    app.add_middleware(InFlight)  # counts the users' requests: the background warm-up waits for them (web/warm.py)
    app.add_middleware(SecurityHeaders)  # outermost: the limits' own refusals carry the headers too

    for name in PAGES:
        app.include_router(import_module(name).router)
    return app

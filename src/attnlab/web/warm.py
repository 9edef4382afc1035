"""`attnlab serve` warms the lab's default pages in the background, so that a learner's first visit to each
finds it computed: the lessons (kept on disk too, lessons/common/disk_cache.py: after the first run of the lab
a restart reads them back in a moment), the templates and the figures.

The warm-up visits the pages through the app itself, as a browser would, one request at a time, on one thread,
and only while no user's request has run for QUIET_S; its lessons yield to users' requests at every training
step (web/warm_gate.py). It stops when the server shuts down (budget.stop_everything) or on stop().
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable

from attnlab.i18n import LANGS
from attnlab.lessons.common.disk_cache import lab_version
from attnlab.lessons.explain import TOPICS
from attnlab.web.budget import closing
from attnlab.web.render import make_url
from attnlab.web.warm_gate import cancel_warm_lessons, users_busy, warming

QUIET_S = 1.0  # the warm-up starts its next page only after users' requests have been quiet this long
LOOK_S = 0.1  # how often it looks


def default_paths(langs: Iterable[str] = LANGS) -> list[str]:
    """Every page's default address, in each language (the lab's default language first): the cheap pages
    first (their templates), then /real, then each concept lesson (its result, its page, its figure)."""
    paths = []
    for lang in langs:
        paths += [make_url(p, lang) for p in ("/", "/toy", "/explain", "/pipeline", "/ledger", "/runs", "/real")]
        for topic in TOPICS:
            paths += [
                make_url(f"/api/explain/{topic}", lang),
                make_url(f"/explain/{topic}", lang),
                make_url(f"/explain/{topic}/figure.png", lang),
            ]
    return paths


async def visit(app, path: str) -> int:
    """GET `path` from the app in this process (no socket), as the warm-up: its status (0 if none came)."""
    url, _, query = path.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": url,
        "raw_path": url.encode(),
        "root_path": "",
        "query_string": query.encode(),
        "headers": [(b"host", b"localhost"), (b"accept", b"text/html")],
        "client": ("127.0.0.1", 0),
        "server": ("localhost", 80),
    }
    answered, status, asked = asyncio.Event(), [], [False]

    async def receive():
        if not asked[0]:
            asked[0] = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await answered.wait()  # the warm-up stays "connected" until its answer is complete
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.start":
            status.append(message["status"])
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            answered.set()

    try:
        await app(scope, receive, send)
    finally:
        answered.set()
    return status[0] if status else 0


class Warmer:
    """The warm-up of one app: start() once; `visited` lists (path, status) as it goes; `done` is set at
    its end, whether it finished, was stopped, or the server closed."""

    def __init__(self, app, paths: list[str] | None = None):
        self.app = app
        self.paths = default_paths() if paths is None else list(paths)
        self.visited: list[tuple[str, int]] = []
        self.done = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="attnlab-warm")

    def start(self) -> Warmer:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop after the current request; a lesson it computes stops at its next step."""
        self._stop.set()
        cancel_warm_lessons("the warm-up was stopped")

    def stopped(self) -> bool:
        return self._stop.is_set() or closing(self.app).is_set()

    def _run(self) -> None:
        warming.set(True)  # this thread's context: every request it makes is the warm-up's
        try:
            lab_version()  # the disk cache's version digest: read once, before the first page needs it
            asyncio.run(self._visit_all())
        except Exception:  # noqa: BLE001 - the warm-up is a courtesy: the server goes on without it
            pass
        finally:
            self.done.set()

    async def _visit_all(self) -> None:
        for path in self.paths:
            while users_busy(QUIET_S) and not self.stopped():
                await asyncio.sleep(LOOK_S)
            if self.stopped():
                return
            try:
                status = await visit(self.app, path)
            except Exception:  # noqa: BLE001 - a page that fails fails for its visitor too, who is told why
                status = 0
            self.visited.append((path, status))


def start(app) -> Warmer:
    """Warm `app`'s default pages in the background (`attnlab serve`)."""
    return Warmer(app).start()

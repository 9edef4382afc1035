"""How the web answers when web/budget.py refuses or stops a computation, on every page and API route:

- Foreign (403): another website asked for heavy work; the page offers a link to compute it from the lab itself
  (a click there is the lab's own request);
- TooLarge (422): one computation would need more memory than the lab gives a request;
- Busy (503 with Retry-After): its lane stayed full;
- Cancelled (503): stopped because the lab is shutting down or nobody waited for it any more.
"""

from __future__ import annotations

from fastapi import FastAPI, Request

from attnlab.i18n import t
from attnlab.train.progress import Cancelled
from attnlab.web.budget import Busy, Foreign, TooLarge
from attnlab.web.errors import _wants_json, error_response
from attnlab.web.render import lang_of, render


def _page_or_json(request: Request, status: int, message: str, key: str, headers: dict | None = None, **fields):
    if _wants_json(request):
        return error_response(request, status, message, headers)
    page = render(
        request,
        "error.html",
        status_code=status,
        code=status,
        message=t(key, lang_of(request), **fields),
        **({"again_url": fields["again"]} if "again" in fields else {}),
    )
    page.headers.update(headers or {})
    return page


def install(app: FastAPI) -> None:
    @app.exception_handler(Foreign)
    async def foreign(request: Request, exc: Foreign):
        again = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return _page_or_json(request, 403, str(exc), "web.error.foreign", again=again)

    @app.exception_handler(TooLarge)
    async def too_large(request: Request, exc: TooLarge):
        return _page_or_json(request, 422, str(exc), "web.error.too_large", need=f"{exc.mb:,.0f}")

    @app.exception_handler(Busy)
    async def busy(request: Request, exc: Busy):
        return _page_or_json(
            request, 503, str(exc), "web.error.busy", {"Retry-After": str(exc.retry_after)}, seconds=exc.retry_after
        )

    @app.exception_handler(Cancelled)
    async def stopped(request: Request, exc: Cancelled):
        return _page_or_json(request, 503, f"the computation was stopped ({exc})", "web.error.stopped")

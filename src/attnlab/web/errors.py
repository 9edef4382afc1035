"""Readable errors: a bad parameter gets HTTP 422 with a sentence a person can act on, plus the details.

JSON (any /api/ path, and /openapi.json): {"message": "query parameter 'query': query must be one of 猫, 追, 老鼠, 它 ...
(got '狗')", "detail": [FastAPI's usual error list]}. A page (any other path) gets the lab's error page
with the same sentence; a 404 or 405 there says so in the page's language. Endpoints that validate with a lesson function turn its ValueError into the same
response with `raise unprocessable(("query", "query"), err, value)`.

A 422 never echoes more than a short excerpt of what was sent (a huge body is not sent back), and text that
cannot be written as UTF-8 (a lone surrogate such as "\ud800") is shown escaped instead of failing.
`error_response` answers outside a route (the request limits in `attnlab.web.limits`) in the same form.
"""

from __future__ import annotations

import json
import math

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from attnlab.i18n import catalog, t
from attnlab.web.render import lang_of, render

EXCERPT = 80  # characters of an input, or of a message, that a 422 shows back
WHERE = {"query": "query parameter", "path": "path parameter", "body": "body field", "header": "header"}


def unprocessable(loc: tuple, error: Exception | str, value=None) -> RequestValidationError:
    """A RequestValidationError for one field, so it is answered like FastAPI's own validation errors."""
    return RequestValidationError([{"type": "value_error", "loc": loc, "msg": str(error), "input": value}])


def _where(loc) -> str:
    loc = list(loc)
    kind = WHERE.get(str(loc[0]), str(loc[0])) if loc else "request"
    name = ""
    for part in loc[1:]:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return f"{kind} '{name}'" if name else kind


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _utf8(text: str) -> str:
    """`text` with anything UTF-8 cannot hold (lone surrogates) written as a \\udXXX escape."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def describe(errors: list[dict]) -> str:
    """One sentence per error: where, what was expected, what came (an excerpt of at most EXCERPT characters)."""
    parts = []
    for err in errors:
        msg = _utf8(str(err.get("msg", "invalid")).removeprefix("Value error, "))
        shown = repr(err.get("input"))[: 4 * EXCERPT]  # repr escapes surrogates; a prefix is enough to test `in`
        text = f"{_where(err.get('loc', ()))}: {_shorten(msg, 4 * EXCERPT)}"
        if "input" in err and err["input"] is not None and shown not in msg and err.get("type") != "missing":
            text += f" (got {_shorten(shown, EXCERPT)})"
        parts.append(text)
    return _utf8("; ".join(parts)) or "invalid request"


def _json_safe(obj):
    # JSON has no NaN or infinity; the offending input is echoed back as its repr ('nan', 'inf').
    if isinstance(obj, float) and not math.isfinite(obj):
        return repr(obj)
    if isinstance(obj, str):
        return _utf8(obj)
    if isinstance(obj, dict):
        return {_utf8(str(k)): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def _excerpt(value):
    """An input as a 422 echoes it: small values whole, anything longer as a shortened string."""
    if value is None or isinstance(value, (bool, int, float)):
        return _json_safe(value)
    if isinstance(value, str):
        return _shorten(_utf8(value), EXCERPT)
    text = json.dumps(_json_safe(jsonable_encoder(value, custom_encoder={bytes: repr})), ensure_ascii=False)
    return _json_safe(json.loads(text)) if len(text) <= EXCERPT else _shorten(text, EXCERPT)


def _detail(errors: list[dict]) -> list[dict]:
    """FastAPI's error list, with each input cut to an excerpt and each message to a few lines."""
    detail = []
    for err in errors:
        err = dict(err)
        if "input" in err:
            err["input"] = _excerpt(err["input"])
        if "msg" in err:
            err["msg"] = _shorten(str(err["msg"]), 4 * EXCERPT)
        detail.append(err)
    return _json_safe(jsonable_encoder(detail, custom_encoder={bytes: repr}))


def _wants_json(request: Request) -> bool:
    # By path, not by Accept: a page address answers with a page whoever asks (a browser, curl, a link checker).
    path = request.url.path
    return path == "/api" or path.startswith("/api/") or path == "/openapi.json"


def install(app: FastAPI) -> None:
    """Register the 422 and 404 handlers on `app`."""

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        errors = list(exc.errors())
        message = describe(errors)
        if _wants_json(request):
            return JSONResponse({"message": message, "detail": _detail(errors)}, status_code=422)
        return render(request, "error.html", status_code=422, code=422, message=message)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        return error_response(
            request, exc.status_code, str(exc.detail), getattr(exc, "headers", None), detail=exc.detail
        )


def error_response(
    request: Request, status: int, message: str, headers: dict | None = None, *, key: str = "", detail=None
):
    """JSON {"message", "detail"} on the API; elsewhere the error page, saying `key` (default web.error.STATUS)
    from the catalog in the page's language when it is there, else `message`."""
    if _wants_json(request):
        body = {"message": message, "detail": message if detail is None else detail}
        return JSONResponse(_json_safe(body), status_code=status, headers=headers)
    key = key or f"web.error.{status}"
    text = t(key, lang_of(request)) if key in catalog() else _utf8(message)
    page = render(request, "error.html", status_code=status, code=status, message=text)
    page.headers.update(headers or {})
    return page

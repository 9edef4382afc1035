"""Readable errors: a bad parameter gets HTTP 422 with a sentence a person can act on, plus the details.

JSON (any /api/ path, and /openapi.json): {"message": "query parameter 'query': query must be one of 猫, 追, 老鼠, 它 ...
(got '狗')", "detail": [FastAPI's usual error list]}. A page (any other path) gets the lab's error page
with the same sentence; a 404 or 405 there says so in the page's language. Endpoints that validate with a lesson function turn its ValueError into the same
response with `raise unprocessable(("query", "query"), err, value)`.
"""

from __future__ import annotations

import math

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from attnlab.i18n import catalog, t
from attnlab.web.render import lang_of, render

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


def describe(errors: list[dict]) -> str:
    """One sentence per error: where, what was expected, what came."""
    parts = []
    for err in errors:
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        text = f"{_where(err.get('loc', ()))}: {msg}"
        if "input" in err and err["input"] is not None and repr(err["input"]) not in msg and err.get("type") != "missing":
            shown = repr(err["input"])
            text += f" (got {shown if len(shown) <= 80 else shown[:77] + '...'})"
        parts.append(text)
    return "; ".join(parts) or "invalid request"


def _json_safe(obj):
    # JSON has no NaN or infinity; the offending input is echoed back as its repr ('nan', 'inf').
    if isinstance(obj, float) and not math.isfinite(obj):
        return repr(obj)
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


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
            detail = _json_safe(jsonable_encoder(errors, custom_encoder={bytes: repr}))
            return JSONResponse({"message": message, "detail": detail}, status_code=422)
        return render(request, "error.html", status_code=422, code=422, message=message)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        if _wants_json(request):
            return JSONResponse({"message": str(exc.detail), "detail": exc.detail}, status_code=exc.status_code,
                                headers=getattr(exc, "headers", None))
        key = f"web.error.{exc.status_code}"
        message = t(key, lang_of(request)) if key in catalog() else str(exc.detail)
        return render(request, "error.html", status_code=exc.status_code, code=exc.status_code, message=message)

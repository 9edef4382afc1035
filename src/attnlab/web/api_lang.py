"""`lang` on the JSON API: zh or en, nothing else (a page is kinder: web/render.py falls back to Chinese and
says so in the page).

A route whose answer holds words declares `lang: ApiLang = "en"` (or "zh"), so /openapi.json publishes the
two values and FastAPI answers any other with its usual 422. `refuse_unknown` runs before every route (an
app-level dependency that publishes nothing): an /api/ address that does not use the language refuses
lang=-1 with the same 422, so no answer pretends to honour a language the lab does not have.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query, Request
from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter, ValidationError

from attnlab.web.errors import _wants_json

ApiLang = Annotated[Literal["zh", "en"], Query(description="zh or en: the language of the answer's words")]
_CHECK = TypeAdapter(Literal["zh", "en"])


async def refuse_unknown(request: Request) -> None:
    """422, word for word as FastAPI's own for a declared `lang`, when an API request's lang is not zh or en
    (every value counts: ?lang=en&lang=-1 is refused too). Async, so no request waits for a worker thread."""
    if not _wants_json(request):
        return
    for value in request.query_params.getlist("lang"):
        try:
            _CHECK.validate_python(value)
        except ValidationError as err:
            raise RequestValidationError(
                [{**e, "loc": ("query", "lang")} for e in err.errors(include_url=False)]
            ) from None

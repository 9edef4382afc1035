"""/seq2seq: the short address of the seq2seq lesson, which lives at /explain/seq2seq (its query string kept)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

router = APIRouter()


@router.get("/seq2seq", include_in_schema=False)
def seq2seq_page(request: Request) -> RedirectResponse:
    query = request.url.query
    return RedirectResponse("/explain/seq2seq" + (f"?{query}" if query else ""), status_code=307)

"""The shape ledger page (/ledger) and its API (/api/ledger)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from attnlab.lessons.ledger import MAX_D, MAX_N, Ledger, shape_ledger
from attnlab.web.errors import unprocessable
from attnlab.web.render import render

router = APIRouter()
DEFAULTS = {"n": "4", "d": "4", "h": "2"}
PRESETS = (("toy", {"n": "4", "d": "4", "h": "2"}), ("gpt2", {"n": "1024", "d": "768", "h": "12"}),
           ("long", {"n": "128000", "d": "4096", "h": "32"}))


@router.get("/ledger", response_class=HTMLResponse, include_in_schema=False)
def ledger_page(request: Request):
    raw = {k: request.query_params.get(k, v).strip() for k, v in DEFAULTS.items()}
    error = None
    try:
        ledger = shape_ledger(raw["n"], raw["d"], raw["h"])
    except ValueError as err:
        error = str(err)
        ledger = None
    kept = {k: v for k, v in raw.items() if v != DEFAULTS[k]}
    return render(request, "ledger.html", ledger=ledger, toy=shape_ledger(4, 4, 2), raw=raw, state=kept,
                  error=error, presets=PRESETS, max_n=MAX_N, max_d=MAX_D)


@router.get("/api/ledger", tags=["ledger"])
def api_ledger(n: int = 4, d_model: int = 4, heads: int = 2) -> Ledger:
    """Every matrix's shape for n tokens, what is parallel in training and sequential in generation, and the
    per-layer cost in multiply-adds: 2 n^2 d (attention matrix) + 12 n d^2 (projections and FFN)."""
    try:
        return shape_ledger(n, d_model, heads)
    except ValueError as err:
        name = str(err).split(" ", 1)[0]
        value = {"n": n, "d_model": d_model, "heads": heads}.get(name)
        raise unprocessable(("query", name if value is not None else "n"), err, value) from None

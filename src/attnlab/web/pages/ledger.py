"""The shape ledger page (/ledger) and its API (/api/ledger).

Both take n, d, h, the names on the page and in the formulas; the API still accepts its first names
d_model and heads for d and h, and a message names the fields the way the caller wrote them.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from attnlab.lessons.common.bad_input import BadInput
from attnlab.lessons.ledger.lesson import MAX_D, MAX_N, Ledger, shape_ledger
from attnlab.web.errors import unprocessable
from attnlab.web.render import lang_of, render

router = APIRouter()
DEFAULTS = {"n": "4", "d": "4", "h": "2"}
PRESETS = (
    ("toy", {"n": "4", "d": "4", "h": "2"}),
    ("gpt2", {"n": "1024", "d": "768", "h": "12"}),
    ("long", {"n": "128000", "d": "4096", "h": "32"}),
)
LESSON_NAMES = {"n": "n", "d_model": "d", "heads": "h"}  # shape_ledger's parameters -> the page's fields


def _message(err: ValueError, lang: str, names: dict[str, str]) -> tuple[str, str]:
    """(the field at fault, the message naming it as `names` says), from a shape_ledger refusal."""
    if not isinstance(err, BadInput):
        return "n", str(err)
    field = names.get(err.field, err.field)
    return field, err.text(lang, name=field, d_name=names["d_model"], h_name=names["heads"])


@router.get("/ledger", response_class=HTMLResponse, include_in_schema=False)
def ledger_page(request: Request):
    lang = lang_of(request)
    raw = {k: request.query_params.get(k, v).strip() for k, v in DEFAULTS.items()}
    error = bad = None
    try:
        ledger = shape_ledger(raw["n"], raw["d"], raw["h"])
    except ValueError as err:
        bad, error = _message(err, lang, LESSON_NAMES)
        ledger = shape_ledger(DEFAULTS["n"], DEFAULTS["d"], DEFAULTS["h"])  # the form keeps what was typed
    kept = {k: v for k, v in raw.items() if v != DEFAULTS[k]}
    return render(
        request,
        "ledger/page.html",
        ledger=ledger,
        toy=shape_ledger(4, 4, 2),
        raw=raw,
        state=kept,
        error=error,
        bad=bad,
        defaults=DEFAULTS,
        presets=PRESETS,
        max_n=MAX_N,
        max_d=MAX_D,
    )


@router.get("/api/ledger", tags=["ledger"])
def api_ledger(
    n: Annotated[int, Query(description="tokens", json_schema_extra={"minimum": 1, "maximum": MAX_N})] = 4,
    d: Annotated[
        int | None, Query(description="model width d (default 4)", json_schema_extra={"minimum": 1, "maximum": MAX_D})
    ] = None,
    h: Annotated[
        int | None,
        Query(
            description="heads h, a divisor of d (default 2): an h that does not divide d is answered 422",
            json_schema_extra={"minimum": 1, "maximum": MAX_D},
        ),
    ] = None,
    # The older names stay accepted but out of the document: with both names a request could say two things.
    d_model: Annotated[int | None, Query(include_in_schema=False)] = None,
    heads: Annotated[int | None, Query(include_in_schema=False)] = None,
) -> Ledger:
    """Every matrix's shape for n tokens, what is parallel in training and sequential in generation, and the
    per-layer cost in multiply-adds: 2 n^2 d (attention matrix) + 12 n d^2 (projections and FFN). The older
    names d_model and heads are still accepted for d and h."""
    for new, old, a, b in (("d", "d_model", d, d_model), ("h", "heads", h, heads)):
        if a is not None and b is not None and a != b:
            raise unprocessable(
                ("query", old), f"{old} is the older name of {new}; give one of them, got {new}={a} and {old}={b}", b
            )
    old = d is None and h is None and (d_model is not None or heads is not None)  # a caller of the old names
    names = {"n": "n", "d_model": "d_model", "heads": "heads"} if old else LESSON_NAMES
    width = d if d is not None else d_model if d_model is not None else 4
    split = h if h is not None else heads if heads is not None else 2
    try:
        return shape_ledger(n, width, split)
    except ValueError as err:
        field, message = _message(err, "en", names)
        value = {"n": n, names["d_model"]: width, names["heads"]: split}.get(field)
        raise unprocessable(("query", field), message, value) from None

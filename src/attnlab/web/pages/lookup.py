"""The soft dictionary lookup page (/lookup) and its API (/api/lookup, /api/lookup/importance)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from attnlab.lessons.common.bad_input import BadInput, shown
from attnlab.lessons.toy.lesson import HEADS, parse_query, toy_lab
from attnlab.lessons.toy.soft_lookup import (
    SoftLookup,
    WeightVsContribution,
    disagreements,
    soft_lookup,
    weights_vs_contributions,
)
from attnlab.web.errors import unprocessable
from attnlab.web.pages.toy import QueryParam, say
from attnlab.web.render import lang_of, render

router = APIRouter()
DEFAULTS = {"query": "它", "head": "1"}


@router.get("/lookup", response_class=HTMLResponse, include_in_schema=False)
def lookup_page(request: Request):
    state = {k: request.query_params.get(k, v).strip() for k, v in DEFAULTS.items()}
    lang = lang_of(request)
    problems = []  # in the page's language
    try:
        parse_query(state["query"])
    except ValueError as err:
        problems.append(say(err, lang))
        state["query"] = DEFAULTS["query"]
    if state["head"] not in {str(h) for h in range(1, len(HEADS) + 1)}:
        problems.append(say(BadInput("toy.err.head", "head", n=len(HEADS), got=shown(state["head"])), lang))
        state["head"] = DEFAULTS["head"]
    look = soft_lookup(state["query"], int(state["head"]))
    kept = {k: v for k, v in state.items() if v != DEFAULTS[k]}
    return render(
        request,
        "toy/lookup.html",
        look=look,
        lab=toy_lab(state["query"]),
        wvc=weights_vs_contributions(),
        disagree=disagreements(),
        state=kept,
        problems=problems,
        heads=[h["name"] for h in HEADS],
    )


@router.get("/api/lookup", tags=["lookup"])
def api_lookup(
    query: QueryParam = "它",
    head: Annotated[
        int,
        Query(
            description=f"which toy head supplies q, K, V (1 to {len(HEADS)})",
            json_schema_extra={"minimum": 1, "maximum": len(HEADS)},
        ),
    ] = 1,
) -> SoftLookup:
    """A hard (argmax, one-hot) and a soft (softmax) lookup of one query in one toy head."""
    try:
        return soft_lookup(query, head)
    except ValueError as err:
        raise unprocessable(
            ("query", "head" if "head" in str(err) else "query"), err, head if "head" in str(err) else query
        ) from None


@router.get("/api/lookup/importance", tags=["lookup"])
def api_importance() -> WeightVsContribution:
    """Weights (0.9, 0.05, 0.05) on values of norms (0.01, 100, 100): each weight beside ||a_j v_j||."""
    return weights_vs_contributions()

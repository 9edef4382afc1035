"""The toy attention lab page (/toy) and its JSON API (/api/toy, /api/toy/mix, /api/toy/hand, /api/toy/check)."""

from __future__ import annotations

import math
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from attnlab.i18n import t
from attnlab.lessons.common.bad_input import BadInput
from attnlab.lessons.toy.hand_calc import (
    MAX_ABS,
    MAX_DIM,
    MAX_KEYS,
    MOVES,
    TEXTBOOK_SCORES,
    TEXTBOOK_VALUES,
    HandCalc,
    Mix,
    hand_calc,
    how_far_o_moved,
    mix,
    parse_number,
    parse_score,
)
from attnlab.lessons.toy.lesson import QUESTIONS, TOKENS, ToyLab, Verdict, check_prediction, parse_query, toy_lab
from attnlab.web.errors import unprocessable
from attnlab.web.render import lang_of, make_url, render
from attnlab.web.responses import answers

router = APIRouter()

# The page's state lives in its URL; these are the defaults (left out of links).
HAND_DEFAULTS = {
    "s1": TEXTBOOK_SCORES[0],
    "s2": TEXTBOOK_SCORES[1],
    "v1x": str(TEXTBOOK_VALUES[0][0]),
    "v1y": str(TEXTBOOK_VALUES[0][1]),
    "v2x": str(TEXTBOOK_VALUES[1][0]),
    "v2y": str(TEXTBOOK_VALUES[1][1]),
}
DEFAULTS = {"query": "它", "causal": "", **{f"ans_{q.id}": "" for q in QUESTIONS}, **HAND_DEFAULTS, "v2_guess": ""}
PRESETS = {"v2_04": {"v2x": "0", "v2y": "4"}, "textbook": HAND_DEFAULTS}
TRUE = {"1", "true", "on", "yes"}


@router.get("/toy", response_class=HTMLResponse, include_in_schema=False)
def toy_page(request: Request, preset: str = ""):
    state = {k: request.query_params.get(k, v).strip() for k, v in DEFAULTS.items()}
    if preset:  # a preset button rewrites the hand-calculation fields, then the URL says what is shown
        state.update(PRESETS.get(preset, {}))
        kept = {k: v for k, v in state.items() if v != DEFAULTS[k]}
        return RedirectResponse(make_url("/toy", lang_of(request), **kept), status_code=303)

    lang = lang_of(request)
    problems: dict[str, str] = {}  # field -> the message, in the page's language
    try:
        parse_query(state["query"])
    except ValueError as err:
        problems["query"] = say(err, lang)
        state["query"] = DEFAULTS["query"]
    causal = state["causal"].lower() in TRUE
    state["causal"] = "1" if causal else ""
    lab = toy_lab(state["query"], causal=causal)

    verdicts = {}
    for q in QUESTIONS:
        given = state[f"ans_{q.id}"]
        if given:
            try:
                verdicts[q.id] = check_prediction(q.id, given)
            except ValueError as err:
                problems[f"ans_{q.id}"] = say(err, lang)
                state[f"ans_{q.id}"] = ""

    hand_problems: dict[str, str] = {}  # the hand calculation keeps the learner's text and marks the box
    for name in HAND_DEFAULTS:
        label = hand_label(name, lang)
        try:
            parse_score(state[name], label) if name.startswith("s") else parse_number(state[name], label)
        except ValueError as err:
            hand_problems[name] = say(err, lang, what=label)
    hand = None
    if not hand_problems:
        try:
            hand = hand_calc([state["s1"], state["s2"]], [[state["v1x"], state["v1y"]], [state["v2x"], state["v2y"]]])
        except ValueError as err:  # each box parsed alone; a refusal of the whole is shown, not a 500
            hand_problems["s1"] = say(err, lang)

    guess = state["v2_guess"] if state["v2_guess"] in MOVES else ""  # the prediction made before v2 = (0, 4)
    state["v2_guess"] = guess
    v2_check = {"guess": guess, "answer": how_far_o_moved(hand)} if guess and hand is not None else None
    kept = {k: v for k, v in state.items() if v != DEFAULTS[k]}
    return render(
        request,
        "toy/page.html",
        lab=lab,
        hand=hand,
        v2_check=v2_check,
        moves=MOVES,
        bad_fields=list(hand_problems),
        hand_problems=hand_problems,
        verdicts=verdicts,
        questions=QUESTIONS,
        problems=problems,
        state=kept,
        raw=state,
        causal=causal,
        feature_labels=[t(f"toy.feature.{f}", lang) for f in lab.features],
    )


def say(err: ValueError, lang: str, **renamed) -> str:
    """A lesson's refusal in the page's language (a BadInput carries its catalog key)."""
    return err.text(lang, **renamed) if isinstance(err, BadInput) else str(err)


def hand_label(name: str, lang: str) -> str:
    """The name the learner sees for a hand-calculation box: s1 -> 's₁', v2y -> 'component 2 of v2'."""
    if name.startswith("s"):
        return "s" + "₁₂"[int(name[1]) - 1]
    return t("toy.hand.component", lang, j=int(name[1]), c="xy".index(name[2]) + 1)


# ---- JSON API ----------------------------------------------------------------------------------------

# The OpenAPI document states each parameter's real values (the enums, ranges and patterns below, taken from the
# lesson's own constants); the lesson still checks them, so a refusal keeps its own message.
QUERIES = [*TOKENS, *(str(i) for i in range(1, len(TOKENS) + 1))]
QueryParam = Annotated[
    str,
    Query(
        description="the query token (猫, 追, 老鼠, 它) or its 1-based position 1..4",
        examples=["它", "4"],
        json_schema_extra={"enum": QUERIES},
    ),
]


@router.get("/api/toy", tags=["toy"])
def api_toy(query: QueryParam = "它", causal: bool = False) -> ToyLab:
    """X, each head's W_Q, W_K, W_V and every derived matrix (Q, K, V, QK^T, S, A, O), and the concatenation."""
    try:
        return toy_lab(query, causal=causal)
    except ValueError as err:
        raise unprocessable(("query", "query"), err, query) from None


def _finite_or_text(x: Any) -> Any:
    # A number must be finite; a string is parsed by the lesson ("ln 3", "3/4"). Anything else is refused here.
    if isinstance(x, bool) or not isinstance(x, (int, float, str)):
        raise ValueError(f"expected a number or a string such as 'ln 3' or '3/4', got {type(x).__name__}")
    if isinstance(x, float) and not math.isfinite(x):
        raise ValueError(f"expected a finite number, got {x!r}")
    return x


# What the lesson parses, as patterns: a decimal or a fraction of integers under MAX_ABS ('-0.5', '3/4'), and
# for a score also the log of a positive fraction ('ln 3', '-ln(3/2)'). The lesson takes a little more
# (exponents, 'log', spaces); the schema names the forms every client can rely on.
_RATIONAL = r"-?([0-9]{1,6}(\.[0-9]{1,6})?|[0-9]{1,6}/[1-9][0-9]{0,5})"
_POSITIVE = r"[1-9][0-9]{0,5}(/[1-9][0-9]{0,5})?"
_LOG = rf"-?ln ?(\({_POSITIVE}\)|{_POSITIVE})"
_NUMBER = {"type": "number", "minimum": -MAX_ABS, "maximum": MAX_ABS}
VALUE_SCHEMA = {"anyOf": [_NUMBER, {"type": "string", "pattern": f"^{_RATIONAL}$"}]}
SCORE_SCHEMA = {"anyOf": [_NUMBER, {"type": "string", "pattern": f"^({_RATIONAL}|{_LOG})$"}]}
Value = Annotated[float | str, BeforeValidator(_finite_or_text), WithJsonSchema(VALUE_SCHEMA)]
Score = Annotated[float | str, BeforeValidator(_finite_or_text), WithJsonSchema(SCORE_SCHEMA)]


def _vectors(n: tuple[int, int], d: tuple[int, int]):
    """The schema of `values`: n[0]..n[1] vectors of d[0]..d[1] components (added to pydantic's own)."""

    def extra(schema: dict) -> None:
        schema.update(minItems=n[0], maxItems=n[1])
        schema["items"].update(minItems=d[0], maxItems=d[1])

    return extra


# One value vector per score, all of one length: JSON Schema says "equal" as one branch per possible length.
SAME_LENGTHS = {
    "allOf": [
        {
            "anyOf": [
                {"properties": {"scores": {"minItems": n, "maxItems": n}, "values": {"minItems": n, "maxItems": n}}}
                for n in range(1, MAX_KEYS + 1)
            ]
        },
        {
            "anyOf": [
                {"properties": {"values": {"items": {"minItems": d, "maxItems": d}}}} for d in range(1, MAX_DIM + 1)
            ]
        },
    ]
}
EXAMPLE = {"scores": [0, "ln 3"], "values": [[2, 0], [0, 2]]}


class MixRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [EXAMPLE], **SAME_LENGTHS})
    scores: list[Score] = Field(
        description=f"one score per key (1 to {MAX_KEYS}): a number, or a string like 'ln 3', '-ln 2', '3/4'",
        json_schema_extra={"minItems": 1, "maxItems": MAX_KEYS},
    )
    values: list[list[Value]] = Field(
        description=f"one value vector per key, all of one length (1 to {MAX_DIM})",
        json_schema_extra=_vectors((1, MAX_KEYS), (1, MAX_DIM)),
    )


class HandRequest(MixRequest):
    """The hand calculation's shape: two scores, two value vectors of two components."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [EXAMPLE]})
    scores: list[Score] = Field(
        description="the two scores s1, s2: numbers, or strings like 'ln 3', '3/4'",
        json_schema_extra={"minItems": 2, "maxItems": 2},
    )
    values: list[list[Value]] = Field(
        description="v1 and v2, two components each", json_schema_extra=_vectors((2, 2), (2, 2))
    )


def _lesson_call(fn, body: BaseModel):
    try:
        return fn(body.scores, body.values)
    except ValueError as err:
        raise unprocessable(("body",), err, body.model_dump()) from None


@router.post("/api/toy/mix", tags=["toy"], responses=answers(400))
def api_mix(body: MixRequest) -> Mix:
    """Scores and values in; weights a = softmax(s), output o = sum_j a_j v_j and the terms a_j v_j out.
    Exact fractions come back too when every e^{s_j} and every value is rational."""
    return _lesson_call(mix, body)


@router.post("/api/toy/hand", tags=["toy"], responses=answers(400))
def api_hand(body: HandRequest) -> HandCalc:
    """The hand calculation: 2 scores, 2 two-dim values, compared with the textbook values v1 = (2, 0),
    v2 = (0, 2) under the same scores (delta_o = sum_j a_j delta_v_j)."""
    return _lesson_call(hand_calc, body)


ANSWERS = sorted({o for q in QUESTIONS for o in q.options})


@router.get("/api/toy/check", tags=["toy"])
def api_check(
    question: Annotated[
        str,
        Query(description=", ".join(q.id for q in QUESTIONS), json_schema_extra={"enum": [q.id for q in QUESTIONS]}),
    ],
    answer: Annotated[
        str,
        Query(
            description="; ".join(f"{q.id}: {', '.join(q.options)}" for q in QUESTIONS),
            json_schema_extra={"enum": ANSWERS},
        ),
    ],
) -> Verdict:
    """Check a committed prediction against the lab; the evidence is the lab's own numbers. Each question
    takes its own answers (see `answer`); another question's answer is refused (422)."""
    try:
        return check_prediction(question, answer)
    except ValueError as err:
        raise unprocessable(
            ("query", "answer" if "answer" in str(err) else "question"),
            err,
            answer if "answer" in str(err) else question,
        ) from None

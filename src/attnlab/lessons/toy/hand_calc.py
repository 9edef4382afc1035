"""The hand calculation: one query, scores s, values v_j -> weights a = softmax(s), output o = sum_j a_j v_j.

The textbook case is s = (0, ln 3), v1 = (2, 0), v2 = (0, 2): a = (1, 3) / 4 = (1/4, 3/4) and
o = (0.5, 1.5). Changing only v2 keeps the weights, so the output moves by delta_o = a_2 delta_v2
(v2 = (0, 4) -> o = (0.5, 3)).

Scores may be written as numbers or as "ln 3", "-ln 2", "ln(3/2)". When every e^{s_j} is rational (a score
is 0 or the log of a rational) and every value is a decimal or a fraction, the result is exact and comes
back as fractions too ("1/4"); the floats always come from `attnlab.nn.attention` in float64.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

import torch

from attnlab.lessons.common.bad_input import BadInput, shown
from attnlab.lessons.common.result import Matrix, Shown, Vector, tolist
from attnlab.nn import attention

TEXTBOOK_SCORES = ("0", "ln 3")
TEXTBOOK_VALUES = ((2, 0), (0, 2))
MAX_KEYS = 16
MAX_DIM = 8
MAX_ABS = 1e6  # beyond this the lesson is about overflow, not mixing
MAX_TEXT = 40  # characters in one typed number
MAX_EXPONENT = 300  # |k| in 1e-k
MAX_EXACT = 10**15  # numerators and denominators of the exact results

Number = int | float | str

_RATIONAL = r"[0-9]+(?:\.[0-9]*)?(?:/[0-9]+(?:\.[0-9]*)?)?"
_EXPONENT = re.compile(r"e\s*[+-]?\s*([0-9_]*)", re.IGNORECASE)
_LN = re.compile(rf"^(?P<sign>[+-]?)\s*(?:ln|log)\s*(?:\(\s*(?P<p>{_RATIONAL})\s*\)|(?P<a>{_RATIONAL}))$")


def _number_text(text: str, what: str, x: object) -> None:
    # Fraction("1e-30000000") builds a 30-million-digit integer (minutes, and the server waits); refuse
    # such strings by their look, before any arithmetic.
    if len(text) > MAX_TEXT:
        raise BadInput("toy.err.too_long", what, what=what, n=len(text), max=MAX_TEXT)
    m = _EXPONENT.search(text)
    if m and abs(int(m[1].replace("_", "") or 0)) > MAX_EXPONENT:
        raise BadInput("toy.err.exponent", what, what=what, max=MAX_EXPONENT, got=shown(x))


def parse_number(x: Number, what: str = "value") -> Fraction:
    """A finite number from a JSON number or a string like '2', '-0.5', '3/4', as an exact Fraction."""
    if isinstance(x, bool) or not isinstance(x, (int, float, str)):
        raise BadInput("toy.err.number", what, what=what, got=shown(x))
    if isinstance(x, (int, float)):
        if not math.isfinite(x):
            raise BadInput("toy.err.number", what, what=what, got=shown(x))
        if abs(x) > MAX_ABS:
            raise BadInput("toy.err.range", what, what=what, max=f"{MAX_ABS:g}", got=shown(x))
        text = repr(x)  # 0.1 arrives as the float nearest 1/10; the learner meant 1/10
    else:
        text = x.strip().replace("−", "-")
        _number_text(text, what, x)
    try:
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise BadInput("toy.err.number", what, what=what, got=shown(x)) from None
    if abs(value) > MAX_ABS:
        raise BadInput("toy.err.range", what, what=what, max=f"{MAX_ABS:g}", got=shown(x))
    return value


def parse_score(x: Number, what: str = "score") -> tuple[float, Fraction | None]:
    """A score as (float value, exact e^score or None). '0' -> (0.0, 1); 'ln 3' -> (1.0986..., 3)."""
    if isinstance(x, str):
        text = x.strip().replace("−", "-").lower()
        _number_text(text, what, x)
        m = _LN.match(text)
        if m:
            arg = Fraction(m["p"] or m["a"])
            if arg <= 0:
                raise BadInput("toy.err.ln", what, what=what, got=shown(x))
            exp = arg if m["sign"] != "-" else 1 / arg
            value = math.log(exp.numerator) - math.log(exp.denominator)
            if abs(value) > MAX_ABS:
                raise BadInput("toy.err.range", what, what=what, max=f"{MAX_ABS:g}", got=shown(x))
            return value, exp
    try:
        exact = parse_number(x, what)
    except BadInput as err:
        if err.key != "toy.err.number":
            raise
        raise BadInput("toy.err.score", what, what=what, got=shown(x)) from None
    return float(exact), (Fraction(1) if exact == 0 else None)  # e^0 = 1 is the only rational e^q


def _small(fractions) -> bool:
    # Exact results are for reading: past 10^15 a fraction is no longer something to check by hand.
    return all(abs(f.numerator) <= MAX_EXACT and f.denominator <= MAX_EXACT for f in fractions)


def fraction_text(x: Fraction) -> str:
    """Fraction(3, 4) -> '3/4'; Fraction(2) -> '2'."""
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


@dataclass
class ExactMix:
    """The same mix in exact arithmetic, as fraction strings."""

    exp_scores: list[str]  # e^{s_j}
    weights: list[str]
    output: list[str]
    contributions: list[list[str]]  # a_j v_j


@dataclass
class Mix(Shown):
    scores: Vector  # s_j as floats
    values: Matrix  # v_j, (n, d_v)
    weights: Vector  # a = softmax(s)
    output: Vector  # o = sum_j a_j v_j
    contributions: Matrix  # a_j v_j
    contribution_norms: Vector  # ||a_j v_j||
    value_norms: Vector  # ||v_j||
    exact: ExactMix | None  # present when every e^{s_j} and every value is rational (and no part exceeds 10^15)


def mix(scores: list[Number], values: list[list[Number]]) -> Mix:
    """softmax(scores) as weights, then the weighted sum of the value vectors."""
    n = len(scores)
    if not 1 <= n <= MAX_KEYS:
        raise BadInput("toy.err.n_scores", "scores", max=MAX_KEYS, n=n)
    if len(values) != n:
        raise BadInput("toy.err.n_values", "values", n=n, got=len(values))
    dims = {len(v) for v in values}
    if len(dims) != 1 or not 1 <= next(iter(dims)) <= MAX_DIM:
        raise BadInput("toy.err.dims", "values", max=MAX_DIM, got=[len(v) for v in values])
    parsed = [parse_score(s, f"scores[{j}]") for j, s in enumerate(scores)]
    exact_values = [[parse_number(x, f"values[{j}][{c}]") for c, x in enumerate(v)] for j, v in enumerate(values)]

    # A score row is attention with d_k = 1: q = (1), k_j = (s_j), so q . k_j / sqrt(1) = s_j.
    s = torch.tensor([value for value, _ in parsed], dtype=torch.float64)  # (n,)
    v = torch.tensor([[float(x) for x in row] for row in exact_values], dtype=torch.float64)  # (n, d_v)
    q = torch.ones(1, 1, dtype=torch.float64)  # (1, d_k=1)
    o, a = attention(q, s[:, None], v)  # (1, 1) @ (1, n) -> weights (1, n); (1, n) @ (n, d_v) -> (1, d_v)
    terms = a[0, :, None] * v  # a_j v_j: (n, 1) * (n, d_v) -> (n, d_v)

    exact = None
    if all(e is not None for _, e in parsed) and _small(e for _, e in parsed) and _small(sum(exact_values, [])):
        exps = [e for _, e in parsed]
        total = sum(exps)
        a_exact = [e / total for e in exps]
        terms_exact = [[a_j * x for x in row] for a_j, row in zip(a_exact, exact_values)]
        o_exact = [sum(col) for col in zip(*terms_exact)]
        if _small([*a_exact, *o_exact, *sum(terms_exact, [])]):
            exact = ExactMix(
                exp_scores=[fraction_text(e) for e in exps],
                weights=[fraction_text(x) for x in a_exact],
                output=[fraction_text(x) for x in o_exact],
                contributions=[[fraction_text(x) for x in row] for row in terms_exact],
            )
    return Mix(
        scores=tolist(s),
        values=tolist(v),
        weights=tolist(a[0]),
        output=tolist(o[0]),
        contributions=tolist(terms),
        contribution_norms=tolist(terms.norm(dim=-1)),
        value_norms=tolist(v.norm(dim=-1)),
        exact=exact,
    )


@dataclass
class HandCalc(Shown):
    """The learner's mix beside the textbook values under the same scores: delta_o = sum_j a_j delta_v_j."""

    score_inputs: list[str]  # the scores as the learner wrote them
    now: Mix  # with the learner's values
    before: Mix  # the same scores with the textbook values v1 = (2, 0), v2 = (0, 2)
    delta_values: Matrix  # delta_v_j = v_j - textbook v_j
    delta_output: Vector  # o_now - o_before
    predicted_delta: Vector  # sum_j a_j delta_v_j, which equals delta_output
    delta_terms: Matrix  # a_j delta_v_j
    exact_delta_output: list[str] | None
    exact_delta_terms: list[list[str]] | None

    def notebook_html(self) -> str:
        from attnlab.lessons.toy.notebook import hand_html  # labelled tables, as the page shows them

        return hand_html(self)


def hand_calc(scores: list[Number] = TEXTBOOK_SCORES, values: list[list[Number]] = TEXTBOOK_VALUES) -> HandCalc:
    """Mix two values under two scores and compare with the textbook values under the same scores."""
    if len(scores) != 2 or len(values) != 2 or any(len(v) != 2 for v in values):
        raise BadInput("toy.err.hand_shape", "scores", n=len(scores), got=[len(v) for v in values])
    now = mix(list(scores), [list(v) for v in values])
    before = mix(list(scores), [list(v) for v in TEXTBOOK_VALUES])
    dv = torch.tensor(now.values, dtype=torch.float64) - torch.tensor(before.values, dtype=torch.float64)  # (2, 2)
    a = torch.tensor(now.weights, dtype=torch.float64)  # (2,)
    terms = a[:, None] * dv  # a_j delta_v_j: (2, 1) * (2, 2) -> (2, 2)
    d_out = torch.tensor(now.output, dtype=torch.float64) - torch.tensor(before.output, dtype=torch.float64)

    exact_out = exact_terms = None
    if now.exact is not None and before.exact is not None:
        a_ex = [Fraction(w) for w in now.exact.weights]
        dv_ex = [[parse_number(x) - Fraction(b) for x, b in zip(v, tv)] for v, tv in zip(values, TEXTBOOK_VALUES)]
        terms_ex = [[a_j * x for x in row] for a_j, row in zip(a_ex, dv_ex)]
        out_ex = [Fraction(x) - Fraction(y) for x, y in zip(now.exact.output, before.exact.output)]
        if _small([*out_ex, *sum(terms_ex, [])]):
            exact_terms = [[fraction_text(x) for x in row] for row in terms_ex]
            exact_out = [fraction_text(x) for x in out_ex]
    return HandCalc(
        score_inputs=[str(s).strip() for s in scores],
        now=now,
        before=before,
        delta_values=tolist(dv),
        delta_output=tolist(d_out),
        predicted_delta=tolist(terms.sum(dim=0)),
        delta_terms=tolist(terms),
        exact_delta_output=exact_out,
        exact_delta_terms=exact_terms,
    )


MOVES = ("part", "all", "none")  # the answers to "v2 becomes (0, 4): how far does o move?"


def how_far_o_moved(result: HandCalc) -> str:
    """The answer the hand-calculation result gives to the prediction question: 'none' when o did not move,
    'all' when it moved by the whole change of the values (a weight of 1), else 'part' (by a_j dv_j only)."""
    d_out = torch.tensor(result.delta_output, dtype=torch.float64)  # (2,)
    d_v = torch.tensor(result.delta_values, dtype=torch.float64).sum(dim=0)  # (2,)
    if torch.allclose(d_out, torch.zeros(2, dtype=torch.float64), atol=1e-12):
        return "none"
    return "all" if torch.allclose(d_out, d_v, atol=1e-12) else "part"

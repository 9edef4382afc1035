"""A claim is a comparison that can fail: a measured number against a control, with a margin to clear.

Three outcomes, said plainly:
  * shown: the measurement clears the margin over the control (or, for an identity, matches within it);
  * not_shown: a tie within the margin: "not shown at these settings", never a verdict;
  * contradicted: the measurement clears the margin the other way (or an identity does not match).

Three ways to compare, one constructor each:
  * `lead`: measured beats baseline by at least `margin` (direction "above", or "below" for smaller-is-better);
  * `within`: measured equals baseline to within `margin` (an identity, a closed form, torch's own result);
  * `beats_chance`: a count k of n against a binomial chance level p, the margin being what chance reaches
    with probability at most ALPHA.

The data carries everything the sentence uses (`control`, `baseline`, `margin`, `values`), so a reader, or a
test, can redo the comparison from the printed numbers: `status_of(direction, measured, baseline, margin)`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

SHOWN, NOT_SHOWN, CONTRADICTED = "shown", "not_shown", "contradicted"
STATUSES = (SHOWN, NOT_SHOWN, CONTRADICTED)
DIRECTIONS = ("above", "below", "within")
MARKS = {SHOWN: "✓", NOT_SHOWN: "○", CONTRADICTED: "✗"}
ALPHA = 0.05  # a count "beats chance" when chance reaches it with probability at most 5%


@dataclass
class Claim:
    """One quantitative statement of the course, checked on numbers the lesson just computed."""

    id: str
    text: str  # in the requested language; the sentence states the control and the margin
    measured: float | None
    bound: float | None  # the number the measurement had to reach: baseline + margin (above), baseline - margin (below)
    holds: bool  # True exactly when status is "shown" (kept for compatibility)
    status: str = NOT_SHOWN
    control: str = ""  # what it is compared with, in words, in the requested language
    baseline: float | None = None  # the control's number
    margin: float | None = None  # what the measurement must clear over (or stay within of) the baseline
    direction: str = "above"  # "above" | "below" | "within"
    values: dict[str, Any] = field(default_factory=dict)  # the measured numbers the sentence uses
    versus: str = ""  # the comparison in words, e.g. "vs chance 25% · margin 10 points · not shown at these settings"
    null: dict[str, Any] | None = (
        None  # what its strongest null measured (lessons/common/nulls.py), where a view ran it
    )


def status_of(direction: str, measured: float, baseline: float, margin: float) -> str:
    """The outcome of one comparison, from the numbers alone (what the tests redo from a claim's JSON)."""
    if direction == "within":
        return SHOWN if abs(measured - baseline) <= margin else CONTRADICTED
    lead_by = measured - baseline if direction == "above" else baseline - measured
    if lead_by >= margin:
        return SHOWN
    if -lead_by >= margin:
        return CONTRADICTED
    return NOT_SHOWN


def _num(x: float | None) -> str:
    if x is None:
        return "—"
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) < 1e15):
        return f"{int(x):,}"
    for digits in range(3, 10):  # honest: 0.9998 never reads as 1, nor 2.0004 as 2 (the claim would misquote it)
        text = f"{x:.{digits}g}"
        if not float(text).is_integer():
            break
    return text


def _make(
    id: str,
    text: str,
    lang: str,
    direction: str,
    measured: float,
    baseline: float,
    margin: float,
    control: str,
    values: dict | None,
    hint: str | None,
) -> Claim:
    from attnlab.i18n import t

    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    if direction != "within" and not margin > 0:
        raise ValueError(f"claim {id}: a lead needs a positive margin (a tie is never a verdict), got {margin!r}")
    measured, baseline, margin = float(measured), float(baseline), float(margin)
    status = status_of(direction, measured, baseline, margin)
    bound = baseline + margin if direction == "above" else baseline - margin if direction == "below" else baseline
    versus = t(
        f"explain.claim.versus.{direction}",
        lang,
        control=control,
        baseline=_num(baseline),
        margin=_num(margin),
        measured=_num(measured),
    )
    if status != SHOWN:
        versus += " · " + t(f"explain.claim.status.{status}", lang)
        if hint and status == NOT_SHOWN:
            versus += " " + hint
    return Claim(
        id,
        text,
        measured,
        bound,
        status == SHOWN,
        status,
        control,
        baseline,
        margin,
        direction,
        dict(values or {}),
        versus,
    )


def lead(
    id: str,
    text: str,
    lang: str,
    *,
    measured: float,
    baseline: float,
    margin: float,
    control: str,
    values: dict | None = None,
    lower: bool = False,
    hint: str | None = None,
) -> Claim:
    """`measured` beats `baseline` by at least `margin` (or, with lower=True, stays below it by that much)."""
    return _make(id, text, lang, "below" if lower else "above", measured, baseline, margin, control, values, hint)


def within(
    id: str,
    text: str,
    lang: str,
    *,
    measured: float,
    expected: float,
    tol: float,
    control: str,
    values: dict | None = None,
) -> Claim:
    """`measured` equals `expected` to within `tol`: an identity or a closed form; a miss contradicts it."""
    return _make(id, text, lang, "within", measured, expected, tol, control, values, None)


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed exactly."""
    if k <= 0:
        return 1.0
    return min(1.0, sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1)))


def chance_count(n: int, p: float, alpha: float = ALPHA) -> int:
    """The smallest count chance reaches with probability at most alpha: what a count must reach to beat it."""
    return next((k for k in range(n + 1) if binomial_tail(k, n, p) <= alpha), n + 1)


def beats_chance(
    id: str,
    text: str,
    lang: str,
    *,
    k: int,
    n: int,
    p: float,
    control: str,
    values: dict | None = None,
    hint: str | None = None,
) -> Claim:
    """A count k of n (heads, seeds, samples) against chance p per trial: shown when chance reaches k with
    probability at most ALPHA; contradicted when it falls as far below chance as it would have to rise above it."""
    need = chance_count(n, p)
    expected = n * p
    values = {"k": k, "n": n, "chance": p, "needed": need, **(values or {})}
    return _make(id, text, lang, "above", k, expected, need - expected, control, values, hint)


def weakest(effects: list[float]) -> float:
    """The seeds' effect as every seed has it: the one nearest zero where all have one sign, else zero (the seeds
    disagree). Shown only where every seed clears the margin, contradicted only where every seed goes the other way."""
    if all(e > 0 for e in effects) or all(e < 0 for e in effects):
        return min(effects, key=abs)
    return 0.0

"""The claim type itself: three outcomes from one comparison, a tie is never a verdict, counts against binomial
chance (checked against exact fractions, which we did not write), and the words in both languages."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest

from attnlab.lessons.common.claims import (
    CONTRADICTED,
    NOT_SHOWN,
    SHOWN,
    beats_chance,
    binomial_tail,
    chance_count,
    lead,
    status_of,
    within,
)


def exact_tail(k: int, n: int, p: Fraction) -> Fraction:
    return sum((comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1)), Fraction(0))


@pytest.mark.parametrize(
    "n,p", [(40, Fraction(1, 4)), (72, Fraction(1, 2)), (10, Fraction(1, 2)), (12, Fraction(1, 3))]
)
def test_binomial_tail_and_the_count_chance_reaches(n, p):
    for k in range(n + 1):
        assert binomial_tail(k, n, float(p)) == pytest.approx(float(exact_tail(k, n, p)), rel=1e-9, abs=1e-15)
    need = chance_count(n, float(p))
    assert exact_tail(need, n, p) <= Fraction(1, 20) < exact_tail(need - 1, n, p)


def test_a_count_near_chance_is_not_shown():
    # The audit's example: 12 of 40 heads pick one of 4 earlier characters; chance gives 10 of 40.
    c = beats_chance(
        "x", "12 of 40 heads look at 明", "en", k=12, n=40, p=0.25, control="a head picking one of 4 at random"
    )
    assert (c.status, c.holds, c.baseline, c.values["needed"]) == (NOT_SHOWN, False, 10.0, 16)
    assert beats_chance("x", "t", "en", k=16, n=40, p=0.25, control="chance").status == SHOWN
    assert beats_chance("x", "t", "en", k=4, n=40, p=0.25, control="chance").status == CONTRADICTED
    # Three seeds out of three is what a coin gives one time in eight: not enough.
    assert beats_chance("x", "t", "en", k=3, n=3, p=0.5, control="a coin").status == NOT_SHOWN


def test_a_lead_needs_its_margin_and_a_tie_is_not_a_verdict():
    kw = dict(baseline=0.25, margin=0.1, control="a uniform map")
    assert lead("a", "t", "en", measured=0.36, **kw).status == SHOWN
    assert lead("a", "t", "en", measured=0.30, **kw).status == NOT_SHOWN
    assert lead("a", "t", "en", measured=0.25, **kw).status == NOT_SHOWN
    assert lead("a", "t", "en", measured=0.14, **kw).status == CONTRADICTED
    assert lead("a", "t", "en", measured=0.14, lower=True, **kw).status == SHOWN
    with pytest.raises(ValueError, match="tie"):
        lead("a", "t", "en", measured=1.0, baseline=0.0, margin=0.0, control="nothing")


def test_an_identity_is_shown_or_contradicted():
    assert within("w", "t", "en", measured=1e-13, expected=0.0, tol=1e-12, control="torch").status == SHOWN
    assert within("w", "t", "en", measured=1e-3, expected=0.0, tol=1e-12, control="torch").status == CONTRADICTED


def test_the_data_redoes_the_status_and_the_words_say_it():
    c = lead("a", "t", "zh", measured=0.30, baseline=0.25, margin=0.1, control="均匀分布", values={"acc": 0.3})
    assert status_of(c.direction, c.measured, c.baseline, c.margin) == c.status == NOT_SHOWN
    assert "均匀分布" in c.versus and "未能证实" in c.versus and c.values == {"acc": 0.3}
    en = lead(
        "a", "t", "en", measured=0.30, baseline=0.25, margin=0.1, control="a uniform map", hint="(try 1000 steps)"
    )
    assert "not shown at these settings (try 1000 steps)" in en.versus and "a uniform map" in en.versus
    assert "shown" not in lead("a", "t", "en", measured=0.5, baseline=0.25, margin=0.1, control="c").versus

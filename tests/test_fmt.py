"""Honest rounding (attnlab.display.fmt.fixed, the pages' `num`, the explain pages' `sig`, sampling's `prob_text`):
a number that is not exactly whole never reads as whole."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnlab.display.fmt import fixed
from attnlab.sampling import prob_text
from attnlab.web.pages.explain import sig
from attnlab.web.render import num


@pytest.mark.parametrize(
    "x, digits, text",
    [
        (0.87157, 3, "0.872"),
        (2.0, 3, "2"),
        (-0.5, 3, "-0.5"),
        (0.0, 3, "0"),
        (-1e-9, 3, "-1e-9"),
        (0.99998, 3, "0.99998"),
        (0.99998, 4, "0.99998"),
        (2e-5, 4, "2e-5"),
        (2.3456e-5, 4, "2.3e-5"),
        (1.0000004, 3, "1.0000004"),
        (12.99996, 3, "12.99996"),
        (1 - 1e-15, 3, "1"),
    ],
)
def test_fixed(x, digits, text):
    assert fixed(x, digits) == text


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), st.integers(min_value=0, max_value=6))
def test_a_number_that_is_not_whole_never_reads_as_whole(x, digits):
    text = fixed(x, digits)
    shown = float(text)
    whole = "." not in text and "e" not in text
    if whole and x != int(x):  # only when a float's own noise is below 12 decimals
        assert abs(x - round(x)) < 10**-12
    assert math.isclose(shown, x, rel_tol=0.06, abs_tol=10**-digits / 2 + 1e-12)


def test_the_page_helpers_use_it():
    assert num(0.99998) == "0.99998" and num(-2e-5, 4) == "\u22122e\u22125" and num(1.0) == "1"
    assert num(None) == "\u2212∞"
    assert sig(0.99998) == "0.99998" and sig(0.5) == "0.5" and sig(1234.6) == "1235" and sig(3.0) == "3"
    assert prob_text(0.99998) == "0.99998" and prob_text(1.0) == "1"

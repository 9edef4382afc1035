"""A claim quotes its numbers honestly (README: 0.9998 never reads as 1): the comparison text of a claim
formats with three significant digits, and with more where three would round the number to an integer."""

import pytest

from attnlab.lessons.common.claims import _num


@pytest.mark.parametrize("x, text", [(0.9998, "0.9998"), (0.99998, "0.99998"), (2.0004, "2.0004"),
                                     (0.0325, "0.0325"), (3.7483, "3.75"), (2.0, "2"), (12, "12"), (None, "—")])
def test_a_claim_never_rounds_a_number_to_an_integer_it_is_not(x, text):
    assert _num(x) == text

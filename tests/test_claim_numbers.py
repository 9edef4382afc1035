"""A claim quotes its numbers honestly (README: 0.9998 never reads as 1): the comparison text of a claim
formats with three significant digits, and with more where three would round the number to an integer."""

import pytest

from attnlab.lessons.common.claims import _num


@pytest.mark.parametrize(
    "x, text",
    [
        (0.9998, "0.9998"),
        (0.99998, "0.99998"),
        (2.0004, "2.0004"),
        (0.0325, "0.0325"),
        (3.7483, "3.75"),
        (2.0, "2"),
        (12, "12"),
        (None, "—"),
    ],
)
def test_a_claim_never_rounds_a_number_to_an_integer_it_is_not(x, text):
    assert _num(x) == text


def test_terminal_tables_never_show_a_number_that_is_not_whole_as_whole():
    from attnlab.lessons.common.view import g

    assert g(0.99998) == "0.99998" and g(-0.99999) == "-0.99999"  # .4g alone reads "1": a certainty it is not
    assert g(1234.6) == "1234.6"  # .4g alone reads "1235"
    assert g(3.0) == "3" and g(7) == "7" and g(0.5) == "0.5" and g(0.12345) == "0.1235"  # the rest unchanged
    assert g(2e-5) == "2e-05" and g(123456.7) == "1.235e+05"  # e-notation never reads as whole

"""The lessons' one Spearman correlation (attnlab.lessons.common.rank_correlation) against scipy.stats.spearmanr:
the same ranks with ties (their average), the same ρ, and None where scipy's is undefined (nan)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from attnlab.lessons.common.rank_correlation import ranks, spearman


def scipy_rho(a, b) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant side: scipy warns and gives nan
        return float(stats.spearmanr(a, b).statistic)


def test_ties_share_their_average_rank_as_scipy_ranks_them():
    x = np.array([3.0, 1.0, 3.0, 2.0, 1.0, 3.0])
    assert list(ranks(x)) == list(stats.rankdata(x, method="average") - 1)  # 0-based
    assert list(ranks(x)) == [4.0, 0.5, 4.0, 2.0, 0.5, 4.0]


def test_with_ties_it_is_scipys_rho():
    a = np.array([1, 2, 2, 3, 3, 3, 4, 5.0])
    b = np.array([2, 1, 4, 3, 3, 5, 5, 6.0])
    assert spearman(a, b) == pytest.approx(scipy_rho(a, b), abs=1e-12)
    assert spearman(a, np.exp(a)) == pytest.approx(1.0) and spearman(a, -a) == pytest.approx(-1.0)


def test_undefined_is_none_where_scipy_gives_nan():
    a = np.arange(6.0)
    assert spearman(a, np.zeros(6)) is None and math.isnan(scipy_rho(a, np.zeros(6)))  # a constant side
    assert spearman(np.ones(4), np.ones(4)) is None
    assert spearman(a[:2], a[:2]) is None  # too short to say anything


def test_a_matrix_is_read_flattened():
    a, b = np.arange(6.0).reshape(2, 3), np.array([0, 2, 1, 3, 5, 4.0])
    assert spearman(a, b) == pytest.approx(scipy_rho(a.ravel(), b), abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(3, 40).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(-3, 3), min_size=n, max_size=n),  # few values: many ties
            st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=n, max_size=n),
        )
    )
)
def test_drawn_arrays_agree_with_scipy(pair):
    a, b = np.array(pair[0], dtype=float), np.array(pair[1])
    rho, expected = spearman(a, b), scipy_rho(a, b)
    if math.isnan(expected):
        assert rho is None
    else:
        assert rho == pytest.approx(expected, abs=1e-9)

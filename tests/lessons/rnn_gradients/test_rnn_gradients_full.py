"""The LSTM's all-paths column of rnn-gradients (issue 40, Also): its per-step factor is the geometric mean of the
column the page shows, above 1 at the defaults (forget gates near 1: the paths through h and the gates make it
grow, an exploding gradient) and below 1 with forget_bias 0 (it fades like the direct path)."""

from __future__ import annotations

import math

import pytest
from results import result


@pytest.mark.parametrize("settings", [{}, {"forget_bias": 0.0}, {"steps": 100}])
def test_the_factor_is_the_geometric_mean_of_the_column(settings):
    lstm = result("rnn-gradients", lang="en", **settings).lstm
    full = lstm.full  # by t − k = 1 .. T
    expected = (full[-1] / full[0]) ** (1 / (len(full) - 1)) if full[-1] > 0 else 0.0
    assert math.isclose(lstm.full_per_step, expected, rel_tol=1e-12)


def test_it_grows_with_forget_gates_near_1_and_fades_without():
    near_1 = result("rnn-gradients", lang="en").lstm
    assert near_1.mean_forget > 0.9 and near_1.full_per_step > 1.02  # defaults: forget_bias 3
    assert near_1.full[-1] > 10 * near_1.full[0] and near_1.direct_mean[-1] < near_1.direct_mean[0]
    without = result("rnn-gradients", lang="en", forget_bias=0.0).lstm
    assert without.full_per_step < 0.9 and without.full[-1] < without.full[0]

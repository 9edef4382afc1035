"""positional's question is answered by the run's own rotation check: one R(Δ) per pair of dims carries PE[pos] to
PE[pos + Δ] for every pos (recomputed here from the result's table), and a run where it missed would make
"on Δ and the starting position" right."""

from dataclasses import replace

import numpy as np
import pytest
from results import result

from attnlab.lessons.explain import TOPICS

TOPIC = TOPICS["positional"]


@pytest.fixture(scope="module")
def r():
    return result("positional", **TOPIC.quick)


def test_at_quick_settings_the_change_depends_on_delta_alone(r):
    answer = TOPIC.answer(r)
    assert answer.option == "a"
    assert answer.numbers["delta"] == r.params["delta"] and answer.numbers["max_error"] < 1e-12  # float64 rounding


def test_the_result_s_own_table_and_matrices_agree(r):
    """The shown table, rotated by the shown R(Δ) of each pair, is the table Δ rows further down."""
    table, delta = np.array(r.table), r.params["delta"]
    for rot in r.rotations:
        pair = table[:, 2 * rot.i : 2 * rot.i + 2]  # (n_positions, 2): (sin, cos)(ω_i pos)
        assert np.abs(pair[:-delta] @ np.array(rot.matrix).T - pair[delta:]).max() < 1e-12


def test_a_rotation_that_misses_makes_another_option_right(r):
    assert TOPIC.answer(replace(r, max_rotation_error=0.3)).option == "b"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_measured_error(r, lang):
    right, wrong = TOPIC.verdict(r, "a", lang), TOPIC.verdict(r, "b", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "a" and wrong["head"] != right["head"]
    err = f"{r.max_rotation_error:.3g}"
    assert err in right["why"] and err in wrong["why"]

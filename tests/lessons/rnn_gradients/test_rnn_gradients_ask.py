"""rnn-gradients' question is answered by the run's own curve at λ < 1: ‖∂h_t/∂h_k‖ falls from 1 step apart to
T steps apart and stays under the bound λ^(t−k) (closed form; the linear RNN reaches it exactly), and a flat or
growing curve would make another option right."""

from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS

TOPIC = TOPICS["rnn-gradients"]


@pytest.fixture(scope="module")
def r():
    return result("rnn-gradients", **TOPIC.quick)


def test_at_quick_settings_the_gradient_shrinks_under_lambda_to_the_distance(r):
    answer = TOPIC.answer(r)
    n = answer.numbers
    assert answer.option == "a"
    assert n["lam"] == r.params["lam"] < 1 and n["T"] == r.params["steps"]
    assert n["bound"] == pytest.approx(n["lam"] ** n["T"])  # the closed form λ^T
    assert n["far"] <= n["bound"] < n["near"]  # under the bound, which is itself far below one step's
    assert r.linear.measured[-1] == pytest.approx(n["bound"], rel=1e-9)  # without tanh the bound is reached


def test_at_lambda_one_or_more_it_reads_the_course_s_own_case(r):
    over = replace(r, chosen=next(c for c in r.curves if c.lam == 1.1))
    assert TOPIC.answer(over).numbers["lam"] == 0.9


@pytest.mark.parametrize(("grow", "option"), [(1.0, "b"), (1.5, "c")])
def test_a_flat_or_growing_curve_makes_another_option_right(r, grow, option):
    curve = r.chosen
    other = replace(curve, measured=[curve.measured[0] * grow**k for k in range(len(curve.measured))])
    assert TOPIC.answer(replace(r, chosen=other)).option == option


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_measured_gradients(r, lang):
    right, wrong = TOPIC.verdict(r, "a", lang), TOPIC.verdict(r, "b", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "a" and wrong["head"] != right["head"]
    far = f"{TOPIC.answer(r).numbers['far']:.3g}"
    assert far in right["why"] and far in wrong["why"]

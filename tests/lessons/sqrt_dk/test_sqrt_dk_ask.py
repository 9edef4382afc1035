"""sqrt-dk's question is answered by the run's own sweep: Var(q·k) grows with d_k (closed form: it equals d_k),
and a sweep whose variance stays flat or falls would make another option right."""

from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS

TOPIC = TOPICS["sqrt-dk"]


@pytest.fixture(scope="module")
def r():
    return result("sqrt-dk", **TOPIC.quick)


def test_at_quick_settings_the_variance_grows_with_d_k(r):
    answer = TOPIC.answer(r)
    assert answer.option == "b"
    assert answer.numbers["d_hi"] == 512 and answer.numbers["var_hi"] == pytest.approx(512, rel=0.25)


@pytest.mark.parametrize(("scale", "option"), [(lambda d: 1.0, "a"), (lambda d: 1.0 / d, "c")])
def test_other_numbers_make_another_option_right(r, scale, option):
    flat = replace(r, sweep=[replace(s, var=scale(s.d_k)) for s in r.sweep])
    assert TOPIC.answer(flat).option == option


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_measured_variances(r, lang):
    right, wrong = TOPIC.verdict(r, "b", lang), TOPIC.verdict(r, "a", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "b" and wrong["head"] != right["head"]
    var_hi = f"{TOPIC.answer(r).numbers['var_hi']:.3g}"
    assert var_hi in right["why"] and var_hi in wrong["why"]

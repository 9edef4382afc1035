"""multihead's question is answered by the run's own parameter counts: h heads of width d_model/h are one
d_model x d_model projection cut into h slices, so both count 4 (d² + d) (closed form, with biases), and counts
that grew or shrank h times would make another option right."""

from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS

pytestmark = pytest.mark.slow  # the lesson's QUICK run trains its XOR models

TOPIC = TOPICS["multihead"]


@pytest.fixture(scope="module")
def r():
    return result("multihead", **TOPIC.quick)


def test_at_quick_settings_the_parameter_count_stays_the_same(r):
    answer, d = TOPIC.answer(r), r.params["d_model"]
    assert answer.option == "a"
    assert answer.numbers["h"] == r.params["n_heads"] > 1
    assert answer.numbers["one"] == answer.numbers["many"] == 4 * (d * d + d)  # W_Q, W_K, W_V, W_O with biases


@pytest.mark.parametrize(("times", "option"), [(lambda p, h: p * h, "b"), (lambda p, h: p // h, "c")])
def test_other_counts_make_another_option_right(r, times, option):
    h = r.many_heads.n_heads
    other = replace(r, many_heads=replace(r.many_heads, params=times(r.one_head.params, h)))
    assert TOPIC.answer(other).option == option


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_counted_parameters(r, lang):
    right, wrong = TOPIC.verdict(r, "a", lang), TOPIC.verdict(r, "b", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "a" and wrong["head"] != right["head"]
    many = str(r.many_heads.params)
    assert many in right["why"] and many in wrong["why"]

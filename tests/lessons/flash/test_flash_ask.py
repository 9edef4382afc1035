"""flash's question is answered by the outputs and the peak memory measured: the tiled loop gives attention()'s
output to float32 rounding and its memory grows as n, not n² (closed form: attention() holds at least the (n, n)
scores and weights); outputs that differ, or memory growing as n², would make another option right. No clock is
read: the timings are shown only."""

from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS

pytestmark = pytest.mark.slow  # times and measures the lesson at n up to 512

TOPIC = TOPICS["flash"]


@pytest.fixture(scope="module")
def r():
    return result("flash", **TOPIC.quick)


def test_at_quick_settings_the_result_is_the_same_without_the_n_by_n_matrix(r):
    answer = TOPIC.answer(r)
    assert answer.option == "a"
    n = answer.numbers
    hand = max(abs(a - b) for a, b in zip(r.hand.flash_out, r.hand.attention_out))  # recomputed from the outputs
    assert hand <= n["diff"] <= 1e-5
    top = r.memory[-1]
    assert n["n"] == top.n == r.params["n_max"]
    assert top.plain_bytes >= 2 * top.scores_bytes > top.tiled_bytes  # the (n, n) scores and weights, or not
    assert n["tiled_growth"] == pytest.approx(1, abs=0.15) and n["plain_growth"] == pytest.approx(2, abs=0.15)


@pytest.mark.parametrize(
    ("change", "option"),
    [
        (lambda r: dict(memory=[replace(pt, max_abs_diff=0.01) for pt in r.memory]), "b"),
        (lambda r: dict(tiled_growth=r.plain_growth), "c"),
    ],
)
def test_other_numbers_make_another_option_right(r, change, option):
    assert TOPIC.answer(replace(r, **change(r))).option == option


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_measured_difference_and_memory(r, lang):
    right, wrong = TOPIC.verdict(r, "a", lang), TOPIC.verdict(r, "b", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "a" and wrong["head"] != right["head"]
    for key in ("diff", "tiled_growth"):
        value = f"{TOPIC.answer(r).numbers[key]:.3g}"
        assert value in right["why"] and value in wrong["why"]

"""induction's question is answered by the run's own heads: which model's best head passes the threshold. At QUICK
(20 steps) neither has formed one yet (the phase change comes near step 500 at the defaults); the scores read agree
with the page's table and uniform attention's closed form, and other scores make another option right."""

from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS

pytestmark = pytest.mark.slow  # trains the lesson's models (at QUICK, from the suite's shared store)

TOPIC = TOPICS["induction"]


@pytest.fixture(scope="module")
def r():
    return result("induction", **TOPIC.quick)


def test_at_quick_settings_neither_model_has_formed_an_induction_head_yet(r):
    answer = TOPIC.answer(r)
    assert answer.option == "d"
    n = answer.numbers
    assert n["steps"] == TOPIC.quick["steps"] and n["two"] < n["threshold"] and n["one"] < n["threshold"]
    # the page's table lists the 2-layer model's heads, then the control's: its last row holds the same bests
    heads = sum(len(layer) for layer in r.prefix_matching[-1])
    last = r.pm_rows[-1]
    assert max(last[:heads]) == n["two"] and max(last[heads:]) == n["one"]
    half = TOPIC.quick["n"]  # uniform attention over i + 1 keys, queries i = n .. 2n - 1, summed by hand
    assert n["chance"] == pytest.approx(sum(1 / (i + 1) for i in range(half, 2 * half)) / half)


def scored(r, two: float, one: float):
    """The result with every head of the last logged step scoring `two` (2-layer) and `one` (the control)."""
    pm2 = [*r.prefix_matching[:-1], [[two] * len(layer) for layer in r.prefix_matching[-1]]]
    pm1 = [*r.one_layer.prefix_matching[:-1], [[one] * len(layer) for layer in r.one_layer.prefix_matching[-1]]]
    return replace(r, prefix_matching=pm2, one_layer=replace(r.one_layer, prefix_matching=pm1))


@pytest.mark.parametrize(("two", "one", "option"), [(0.96, 0.1, "a"), (0.1, 0.9, "b"), (0.9, 0.8, "c")])
def test_other_scores_make_another_option_right(r, two, one, option):
    assert TOPIC.answer(scored(r, two, one)).option == option
    assert TOPIC.answer(r).option == "d"  # the shared result is untouched


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_both_models_scores(r, lang):
    right, wrong = TOPIC.verdict(r, "d", lang), TOPIC.verdict(r, "a", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "d" and wrong["head"] != right["head"]
    n = TOPIC.answer(r).numbers
    for x in (n["two"], n["one"]):
        assert f"{x:.3g}" in right["why"] and f"{x:.3g}" in wrong["why"]

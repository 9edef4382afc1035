"""permutation's question is answered by the run's own 明月 / 月明 pair: without positions 明's output is the same
in both orders (self-attention is permutation-equivariant: the shown output rows agree entry for entry), and a
run where they differed would make another option right."""

from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS

TOPIC = TOPICS["permutation"]


@pytest.fixture(scope="module")
def r():
    return result("permutation", **TOPIC.quick)


def test_at_quick_settings_ming_gets_the_same_output_in_both_orders(r):
    answer = TOPIC.answer(r)
    assert answer.option == "a"
    assert answer.numbers["plain"] <= 1e-5 < answer.numbers["positioned"]  # positions are what tells them apart


def test_the_shown_outputs_agree_with_the_measured_difference(r):
    plain, positioned = r.pair["without_positions"], r.pair["with_positions"]
    assert plain["ming_yue"] == pytest.approx(plain["yue_ming"], abs=1e-5)  # the rows the page shows
    gap = max(abs(a - b) for a, b in zip(positioned["ming_yue"], positioned["yue_ming"]))
    assert gap <= positioned["max_diff"] + 1e-6  # the first dims never differ by more than the largest difference


@pytest.mark.parametrize(("share", "option"), [(0.03, "b"), (0.5, "c")])
def test_a_pair_that_differs_makes_another_option_right(r, share, option):
    plain = r.pair["without_positions"]
    moved = {**plain, "max_diff": share * plain["scale"]}
    assert TOPIC.answer(replace(r, pair={**r.pair, "without_positions": moved})).option == option


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_measured_differences(r, lang):
    right, wrong = TOPIC.verdict(r, "a", lang), TOPIC.verdict(r, "c", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "a" and wrong["head"] != right["head"]
    numbers = TOPIC.answer(r).numbers
    for value in (numbers["plain"], numbers["positioned"]):
        assert f"{value:.3g}" in right["why"] and f"{value:.3g}" in wrong["why"]

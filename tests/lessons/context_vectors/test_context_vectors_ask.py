"""context-vectors' question is answered by the GPT's vectors: the shared word's two vectors differ by exactly 0
(the causal mask keeps what follows out), while the encoder with the same weights tells them apart; a GPT whose
vectors differed would make the other option right."""

from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS

TOPIC = TOPICS["context-vectors"]


@pytest.fixture(scope="module")
def r():
    return result("context-vectors", **TOPIC.quick)


def test_at_quick_settings_the_causal_vectors_are_identical(r):
    answer = TOPIC.answer(r)
    assert answer.option == "a" and answer.numbers["word"] == "苹果"
    assert answer.numbers["gpt_diff"] == 0.0 and all(x.causal_cos == pytest.approx(1.0) for x in r.layers)
    assert answer.numbers["enc_diff"] > 0  # the same weights without the mask: the vectors differ


def test_vectors_that_differ_make_the_other_option_right(r):
    leaky = replace(r, layers=[replace(x, causal_max_l2=x.encoder_min_l2) for x in r.layers])
    assert TOPIC.answer(leaky).option == "b"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_measured_difference(r, lang):
    right, wrong = TOPIC.verdict(r, "a", lang), TOPIC.verdict(r, "b", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "a" and wrong["head"] != right["head"]
    enc = f"{r.layers[-1].encoder_l2:.3g}"
    assert enc in right["why"] and enc in wrong["why"] and "苹果" in right["why"]

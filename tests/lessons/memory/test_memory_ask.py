"""memory's question is answered by the bytes measured on the lab's model: weights, gradients and AdamW's state come
to 16 bytes a parameter (4 + 4 + 8, and 4 bytes a tensor for AdamW's step), N counted here by torch; a run that
kept less state would make another option right."""

from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS
from attnlab.lessons.memory.lesson import LAB
from attnlab.models import GPT, GPTConfig

TOPIC = TOPICS["memory"]


@pytest.fixture(scope="module")
def r():
    return result("memory", **TOPIC.quick)


def test_at_quick_settings_a_parameter_takes_16_bytes(r):
    answer = TOPIC.answer(r)
    assert answer.option == "d"
    params = list(GPT(GPTConfig(**LAB)).parameters())
    n = sum(p.numel() for p in params)
    assert answer.numbers["params"] == n
    assert answer.numbers["per_param"] * n == pytest.approx(16 * n + 4 * len(params))


@pytest.mark.parametrize(("dropped", "option"), [({"gradients", "adamw"}, "a"), ({"adamw"}, "b")])
def test_other_numbers_make_another_option_right(r, dropped, option):
    measured = {**r.measured, **{part: 0 for part in dropped}}  # a run that held none of these (plain SGD: no state)
    assert TOPIC.answer(replace(r, measured=measured)).option == option


def test_half_the_optimizer_state_makes_12_bytes(r):
    measured = {**r.measured, "adamw": r.measured["adamw"] // 2}  # one moment instead of two
    assert TOPIC.answer(replace(r, measured=measured)).option == "c"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_measured_bytes(r, lang):
    right, wrong = TOPIC.verdict(r, "d", lang), TOPIC.verdict(r, "a", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "d" and wrong["head"] != right["head"]
    per_param = f"{TOPIC.answer(r).numbers['per_param']:.3g}"
    assert per_param == "16" and per_param in right["why"] and per_param in wrong["why"]

"""mlm's question is answered by the run's paired lead: at QUICK (20 steps, d_model 8) all three models are still at
chance (within four binomial standard deviations of 1/40), so neither leads: "about the same". McNemar's bound
holds for the lead it reads, and leads that agree by more than LEADS would make another option right."""

import math
from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS

pytestmark = [pytest.mark.usefixtures("one_thread"), pytest.mark.slow]  # trains the lesson's models

TOPIC = TOPICS["mlm"]


@pytest.fixture(scope="module")
def r():
    return result("mlm", **TOPIC.quick)


def test_at_quick_settings_the_barely_trained_models_are_about_the_same(r):
    answer = TOPIC.answer(r)
    assert answer.option == "c"
    n, chance = answer.numbers["n"], 1 / 40
    for kind in ("bi", "causal"):
        assert abs(answer.numbers[kind] - chance) <= 4 * math.sqrt(chance * (1 - chance) / n)
    # McNemar: z = (b - c) / sqrt(b + c) with b - c the difference in right guesses, so |z| <= sqrt(|b - c|)
    ahead = r.correct["bidirectional"] - r.correct["causal"]
    assert abs(answer.numbers["za"]) <= math.sqrt(abs(ahead)) + 1e-12
    assert math.copysign(1, answer.numbers["za"]) == math.copysign(1, ahead) or ahead == 0


@pytest.mark.parametrize(("z", "option"), [((5.0, 4.0), "a"), ((-3.0, -6.0), "b"), ((5.0, -5.0), "c")])
def test_other_numbers_make_another_option_right(r, z, option):
    paired = {**r.paired, "bidirectional-causal": {"z_accuracy": z[0], "z_loss": z[1]}}
    assert TOPIC.answer(replace(r, paired=paired)).option == option


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_measured_lead(r, lang):
    right, wrong = TOPIC.verdict(r, "c", lang), TOPIC.verdict(r, "a", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "c" and wrong["head"] != right["head"]
    zl = f"{TOPIC.answer(r).numbers['zl']:.3g}"
    assert zl in right["why"] and zl in wrong["why"]

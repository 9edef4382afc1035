"""moe's question is answered by the run's losses: at QUICK the MoE ends lower than the dense model with as many
parameters per token (the two differ by exactly the routers, d_model · E a layer), on the evaluation windows and
in the last training batch alike; losses that tie or turn would make another option right."""

import math
from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS
from attnlab.lessons.moe import runs

pytestmark = pytest.mark.slow  # trains the lesson's models

TOPIC = TOPICS["moe"]


@pytest.fixture(scope="module")
def r():
    return result("moe", **TOPIC.quick)


def with_dense_loss(r, loss):
    """A copy of r whose dense (equal active) model ends at loss(the MoE's loss)."""
    moe = next(run for run in r.runs if run.name == "moe")
    return replace(r, runs=[replace(x, loss=loss(moe.loss)) if x.name == "dense_active" else x for x in r.runs])


def test_at_quick_settings_the_moe_ends_lower(r):
    answer = TOPIC.answer(r)
    assert answer.option == "a"
    by = {run.name: run for run in r.runs}
    moe, dense = by["moe"], by["dense_active"]
    routers = runs.BASE["n_layers"] * runs.BASE["d_model"] * moe.n_experts
    assert moe.top_k == 1 and answer.numbers["active"] - dense.total_params == routers  # as many per token
    assert answer.numbers["dense"] - answer.numbers["moe"] > answer.numbers["margin"]
    assert moe.loss_last < dense.loss_last  # the last training batch agrees
    assert max(moe.loss, dense.loss) < math.log(r.vocab_size)  # both learned: below a uniform guess


@pytest.mark.parametrize(("loss", "option"), [(lambda m: m + 0.01, "c"), (lambda m: m - 0.1, "b")])
def test_other_numbers_make_another_option_right(r, loss, option):
    assert TOPIC.answer(with_dense_loss(r, loss)).option == option


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_measured_losses(r, lang):
    right, wrong = TOPIC.verdict(r, "a", lang), TOPIC.verdict(r, "c", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "a" and wrong["head"] != right["head"]
    moe = f"{TOPIC.answer(r).numbers['moe']:.3g}"
    assert moe in right["why"] and moe in wrong["why"]

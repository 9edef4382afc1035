"""ffn-memory's question is answered by the run's own knockouts: a neuron knocked out costs more where it fires than
where it is quiet, beyond the lesson's noise margin. At QUICK it does; the means agree with the per-layer table, and
other costs make another option right."""

from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS
from attnlab.lessons.ffn_memory.lesson import FLOOR

pytestmark = pytest.mark.slow  # trains the lesson's model (at QUICK, from the suite's shared store)

TOPIC = TOPICS["ffn-memory"]


@pytest.fixture(scope="module")
def r():
    return result("ffn-memory", **TOPIC.quick)


def test_at_quick_settings_a_neuron_matters_where_it_fires(r):
    answer = TOPIC.answer(r)
    assert answer.option == "a"
    n = answer.numbers
    assert n["fire"] - n["quiet"] > n["margin"] >= FLOOR and n["n"] > 0
    # the same means from the per-layer table, each layer's weighted by its live neurons
    alive = sum(row.alive for row in r.layers)
    assert alive == n["n"]
    assert sum(row.alive * row.hurt_fire for row in r.layers) / alive == pytest.approx(n["fire"])
    assert sum(row.alive * row.hurt_quiet for row in r.layers) / alive == pytest.approx(n["quiet"], abs=1e-12)
    # the neuron listed first is the one whose knockout hurts most where it fires: at least the mean
    assert r.rows[0].hurt_fire >= n["fire"]


@pytest.mark.parametrize(("fire", "quiet", "option"), [(0.01, 0.01, "c"), (0.0, 0.05, "b")])
def test_other_costs_make_another_option_right(r, fire, quiet, option):
    assert TOPIC.answer(replace(r, hurt_fire=fire, hurt_quiet=quiet)).option == option
    assert TOPIC.answer(r).option == "a"  # the shared result is untouched


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_both_costs(r, lang):
    right, wrong = TOPIC.verdict(r, "a", lang), TOPIC.verdict(r, "c", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "a" and wrong["head"] != right["head"]
    n = TOPIC.answer(r).numbers
    for x in (n["fire"], n["quiet"], n["margin"]):
        assert f"{x:.3g}" in right["why"] and f"{x:.3g}" in wrong["why"]

"""break's question is answered by the run's own pairs: at QUICK no-causal-mask's causal loss is higher than the
intact model's by more than the seeds' noise (a one-sided t margin, redone here with scipy), and pairs whose
losses tie or fall would make another option right."""

import statistics
from dataclasses import replace

import pytest
from results import result
from scipy import stats

from attnlab.lessons.explain import TOPICS

pytestmark = pytest.mark.slow  # trains the lesson's models

TOPIC = TOPICS["break"]


@pytest.fixture(scope="module")
def r():
    return result("break", **TOPIC.quick)


def with_ablated(r, causal):
    """A copy of r whose ablated runs end at causal(intact run's final causal loss)."""
    intact = {x.seed: x.final_causal for x in r.runs if x.model == "intact"}
    runs = [replace(x, final_causal=causal(intact[x.seed])) if x.model == "ablated" else x for x in r.runs]
    return replace(r, runs=runs)


def test_at_quick_settings_the_causal_loss_is_clearly_higher(r):
    answer = TOPIC.answer(r)
    assert r.ablation == "no-causal-mask" and answer.option == "a"
    pairs = {x.seed: {} for x in r.runs}
    for x in r.runs:
        pairs[x.seed][x.model] = x.final_causal
    d = [p["ablated"] - p["intact"] for p in pairs.values()]
    margin = max(0.01, stats.t.ppf(0.95, len(d) - 1) * statistics.stdev(d) / len(d) ** 0.5)
    assert answer.numbers["margin"] == pytest.approx(margin, rel=1e-3)
    assert answer.numbers["ablated"] - answer.numbers["intact"] == pytest.approx(statistics.fmean(d))
    assert statistics.fmean(d) > margin
    assert answer.numbers["ablated"] == pytest.approx(r.table[1].causal_mean)  # the page's table shows the same


@pytest.mark.parametrize(("causal", "option"), [(lambda i: i + 1e-4, "b"), (lambda i: i - 0.5, "c")])
def test_other_numbers_make_another_option_right(r, causal, option):
    assert TOPIC.answer(with_ablated(r, causal)).option == option


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_measured_losses(r, lang):
    right, wrong = TOPIC.verdict(r, "a", lang), TOPIC.verdict(r, "b", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "a" and wrong["head"] != right["head"]
    ablated = f"{TOPIC.answer(r).numbers['ablated']:.3g}"
    assert ablated in right["why"] and ablated in wrong["why"]

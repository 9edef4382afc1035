"""complexity's question is answered by the run's own FLOP counts: at QUICK (as at the defaults) n is below the
crossover n = 2d + d_ff, so the nd² terms are the larger part, their share the closed form's 4n / (4n + 8d + 4d_ff),
and counts where the n²d terms led, or matched, would make another option right."""

from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS

pytestmark = pytest.mark.slow  # the lesson times its block

TOPIC = TOPICS["complexity"]


@pytest.fixture(scope="module")
def r():
    return result("complexity", **TOPIC.quick)


def test_at_quick_settings_the_projections_and_the_ffn_cost_more(r):
    answer, p = TOPIC.answer(r), r.params
    n, d, d_ff = p["n"], p["d_model"], p["ff_mult"] * p["d_model"]
    assert answer.option == "b"
    assert answer.numbers["n"] < answer.numbers["cross"] == 2 * d + d_ff
    closed = 4 * n * n * d / (4 * n * n * d + 8 * n * d * d + 4 * n * d * d_ff)  # = 4n / (4n + 8d + 4d_ff)
    assert answer.numbers["share"] == pytest.approx(closed) == pytest.approx(r.quadratic_share)


@pytest.mark.parametrize(("share", "option"), [(0.8, "a"), (0.52, "c")])
def test_other_counts_make_another_option_right(r, share, option):
    block = next(c.counted for c in r.checks if c.part == "block")
    checks = [replace(c, counted=int(share * block)) if c.part == "scores+weighted_sum" else c for c in r.checks]
    assert TOPIC.answer(replace(r, checks=checks)).option == option


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_counted_share(r, lang):
    right, wrong = TOPIC.verdict(r, "b", lang), TOPIC.verdict(r, "a", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "b" and wrong["head"] != right["head"]
    share = f"{TOPIC.answer(r).numbers['share']:.1%}"
    assert share in right["why"] and share in wrong["why"]

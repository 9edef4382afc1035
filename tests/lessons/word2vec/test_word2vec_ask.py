"""word2vec's question is answered by the distributional hypothesis measured: after training, vector cosine follows
context similarity (Spearman), by far more than the same model trained on the characters shuffled and than chance;
a correlation that did not beat the shuffled one, or cosines all near 0, would make another option right."""

import math
from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS
from attnlab.lessons.word2vec.claims import SPREADS

pytestmark = pytest.mark.slow  # trains the lesson's models

TOPIC = TOPICS["word2vec"]


@pytest.fixture(scope="module")
def r():
    return result("word2vec", **TOPIC.quick)


def test_at_quick_settings_the_vectors_of_characters_used_alike_move_together(r):
    answer = TOPIC.answer(r)
    assert answer.option == "a"
    assert next(c for c in r.claims if c.id == "distributional").holds  # the lesson's own claim agrees
    n = answer.numbers
    assert n["margin"] == pytest.approx(SPREADS * r.context_corr_random_sd)
    assert n["trained"] - n["null"] >= n["margin"] and n["trained"] > r.context_corr_random + n["margin"]
    assert n["null"] == r.context_corr_shuffled  # the twin trained alike on the characters shuffled
    assert abs(r.context_corr_random) < 3 * r.context_corr_random_sd  # random tables: no correlation, as expected


def zero_cosines(r):
    queries = [replace(q, neighbours=[replace(x, cos=0.0) for x in q.neighbours]) for q in r.queries]
    return replace(r, queries=queries)


@pytest.mark.parametrize(
    ("change", "option"),
    [
        (lambda r: replace(r, context_corr=r.context_corr_shuffled), "c"),
        (lambda r: replace(r, context_corr=r.context_corr_shuffled, context_corr_init=-1.0), "c"),  # start beaten
        (lambda r: replace(r, context_corr_random_sd=None), "c"),  # undefined: not shown
        (zero_cosines, "b"),
    ],
)
def test_other_numbers_make_another_option_right(r, change, option):
    changed = change(r)
    answer = TOPIC.answer(changed)
    assert answer.option == option
    if changed.context_corr_random_sd is None:
        assert math.isnan(answer.numbers["margin"])


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_measured_correlations(r, lang):
    right, wrong = TOPIC.verdict(r, "a", lang), TOPIC.verdict(r, "c", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "a" and wrong["head"] != right["head"]
    trained = f"{r.context_corr:+.3g}"
    assert trained in right["why"] and trained in wrong["why"]

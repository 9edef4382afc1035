"""one-hot's question is answered by the lesson's own measure: the rank correlation of embedding cosine with context
similarity, trained against the same model trained on the characters shuffled, by two standard deviations of the difference of two random tables; orthogonal
embeddings, or a correlation that rose, would make another option right.

At QUICK (d_model 8, 20 steps on 静夜思) the rise falls just short of the margin, so this run answers "no more
pattern than before training"; at the defaults (d_model 32, 200 steps) it clears it. The answer follows the lesson's
claim either way."""

import math
from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS
from attnlab.lessons.one_hot.claims import SPREADS

pytestmark = pytest.mark.slow  # trains the lesson's model

TOPIC = TOPICS["one-hot"]


@pytest.fixture(scope="module")
def r():
    return result("one-hot", **TOPIC.quick)


def claim(r, name):
    return next(c for c in r.claims if c.id == name)


def test_at_quick_settings_the_answer_is_the_lessons_own_claim(r):
    answer = TOPIC.answer(r)
    assert answer.option == ("a" if claim(r, "training_context").holds else "b")  # at QUICK: "b" (see above)
    n, shown = answer.numbers, claim(r, "training_context")
    assert n["margin"] == pytest.approx(SPREADS * r.context_corr_spread) == pytest.approx(shown.margin)
    assert (n["corr"] - n["null"] >= n["margin"]) == (answer.option == "a")  # against the twin on shuffled text
    assert n["null"] == r.context_corr_shuffled == shown.baseline
    assert n["onehot_cos"] == 0.0 and n["mean_cos"] > 0.02  # one-hot orthogonal (closed form), the embeddings not


@pytest.mark.parametrize(
    ("change", "option"),
    [
        (lambda r: dict(context_corr=r.context_corr_shuffled + 3 * r.context_corr_spread * SPREADS), "a"),
        (lambda r: dict(context_corr=r.context_corr_shuffled, context_corr_init=-1.0), "b"),  # only the start beaten
        (lambda r: dict(dense_mean_cos=0.0), "c"),
        (lambda r: dict(context_corr=None), "b"),  # undefined: not shown
    ],
)
def test_other_numbers_make_another_option_right(r, change, option):
    answer = TOPIC.answer(replace(r, **change(r)))
    assert answer.option == option
    if changed_to_none(change, r):
        assert math.isnan(answer.numbers["corr"])


def changed_to_none(change, r) -> bool:
    return change(r).get("context_corr", 0.0) is None


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_measured_correlations(r, lang):
    answer = TOPIC.answer(r)
    other = "a" if answer.option != "a" else "b"
    right, wrong = TOPIC.verdict(r, answer.option, lang), TOPIC.verdict(r, other, lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == answer.option and wrong["head"] != right["head"]
    corr = f"{answer.numbers['corr']:+.3g}"
    assert corr in right["why"] and corr in wrong["why"]

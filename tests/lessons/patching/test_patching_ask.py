"""patching's question is answered by the run's own prompt: the character the last layer attends to most against
the one whose replacement moves the answer most. At QUICK they differ (weights ≠ importance); the attention read
agrees with the heads' weights and with rollout's closed form, and other importances make the other option right."""

from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.slow,
]  # trains the lesson's model (at QUICK, from the suite's shared store); tiny models: one CPU thread

TOPIC = TOPICS["patching"]


@pytest.fixture(scope="module")
def r():
    return result("patching", **TOPIC.quick)


def test_at_quick_settings_the_most_attended_character_is_not_the_most_important(r):
    answer = TOPIC.answer(r)
    assert answer.option == "b"
    n = answer.numbers
    assert n["attended"] != n["important"] and n["importance"] > n["attended_importance"]
    a, T = r.trained, len(r.prompt)
    # the changed character's attention is the mean over the last layer's heads of their weight to it
    assert a.attention[r.key - 1] == pytest.approx(sum(a.weight_key[-1]) / len(a.weight_key[-1]), abs=1e-6)
    # one block: rollout is the row of ½A + ½I, so half the attention on every earlier character
    assert r.params["n_layers"] == 1
    assert a.rollout[: T - 1] == pytest.approx([x / 2 for x in a.attention[: T - 1]], abs=1e-6)
    assert n["attention"] == max(a.attention[: T - 1]) and n["importance"] == max(a.importance[: T - 1])


def test_other_importances_make_the_other_option_right(r):
    a = r.trained
    follow = [*a.attention[:-1], None]  # importance that follows the attention exactly
    assert TOPIC.answer(replace(r, trained=replace(a, importance=follow))).option == "a"
    assert TOPIC.answer(r).option == "b"  # the shared result is untouched


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_both_characters(r, lang):
    right, wrong = TOPIC.verdict(r, "b", lang), TOPIC.verdict(r, "a", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "b" and wrong["head"] != right["head"]
    n = TOPIC.answer(r).numbers
    for why in (right["why"], wrong["why"]):
        assert f"「{n['attended']}」" in why and f"「{n['important']}」" in why
        assert f"{n['attention']:.3g}" in why and f"{n['importance']:.3g}" in why

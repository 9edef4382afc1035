"""seq2seq's question is answered by the run's per-character accuracy at the longest trained length: at QUICK the
model without attention gets the fewest right. Each accuracy is a count over n_test strings of L + 1 target
tokens and no less than the exact-match accuracy; other numbers would make another option right."""

from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS

pytestmark = pytest.mark.slow  # trains the lesson's models

TOPIC = TOPICS["seq2seq"]


@pytest.fixture(scope="module")
def r():
    return result("seq2seq", **TOPIC.quick)


def test_at_quick_settings_the_model_without_attention_gets_the_fewest_right(r):
    answer = TOPIC.answer(r)
    assert answer.option == "a"
    L, at = answer.numbers["L"], r.lengths.index(answer.numbers["L"])
    assert L == max(r.train_lengths) and not r.longer[at]
    tokens = r.params["n_test"] * (L + 1)  # every test string's L characters and its end mark
    for kind, key in (("no_attention", "none"), ("bahdanau", "bahdanau"), ("transformer", "transformer")):
        share = answer.numbers[key]
        assert share * tokens == pytest.approx(round(share * tokens), abs=1e-4)  # a count of characters
        assert share >= r.accuracy[kind][at]  # a string right is every character right
    assert answer.numbers["none"] < min(answer.numbers["bahdanau"], answer.numbers["transformer"])


def with_accuracy(r, kind, value):
    at = r.lengths.index(r.train_lengths[-1])
    row = [value if i == at else v for i, v in enumerate(r.token_accuracy[kind])]
    return replace(r, token_accuracy={**r.token_accuracy, kind: row})


@pytest.mark.parametrize(("kind", "value", "option"), [("no_attention", 1.0, "b"), ("transformer", 0.0, "c")])
def test_other_numbers_make_another_option_right(r, kind, value, option):
    assert TOPIC.answer(with_accuracy(r, kind, value)).option == option


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_measured_accuracies(r, lang):
    right, wrong = TOPIC.verdict(r, "a", lang), TOPIC.verdict(r, "c", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "a" and wrong["head"] != right["head"]
    none = f"{TOPIC.answer(r).numbers['none']:.1%}"
    assert none in right["why"] and none in wrong["why"]

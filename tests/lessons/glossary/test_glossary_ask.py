"""The glossary's question (apart from its quizzes) is answered by the order the model recorded: embedding, then
the block, then the logits; a walk recorded in another order would make another option right."""

from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS
from attnlab.lessons.glossary.lesson import STAGES
from attnlab.text import CharTokenizer

TOPIC = TOPICS["glossary"]


@pytest.fixture(scope="module")
def r():
    return result("glossary", **TOPIC.quick)


def test_at_quick_settings_the_embedding_comes_first_and_the_logits_last(r):
    answer = TOPIC.answer(r)
    assert answer.option == "a" and [s.stage for s in r.stages] == STAGES
    text = r.params["text"]
    assert answer.numbers["v"] == CharTokenizer.train(text).vocab_size  # one score per token of the vocabulary
    assert answer.numbers["d"] == 16  # the tiny GPT's d_model


def test_the_quizzes_do_not_decide_it(r):
    assert TOPIC.answer(result("glossary")) == TOPIC.answer(r)  # no quiz answered


@pytest.mark.parametrize(
    ("order", "option"), [(("block", "embedding", "logits"), "b"), (("embedding", "logits", "block"), "c")]
)
def test_another_recorded_order_makes_another_option_right(r, order, option):
    by = {s.stage: s for s in r.stages}
    stages = [by["token"], by["id"], *(by[s] for s in order), by["probabilities"]]
    assert TOPIC.answer(replace(r, stages=stages)).option == option


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_recorded_order(r, lang):
    right, wrong = TOPIC.verdict(r, "a", lang), TOPIC.verdict(r, "c", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "a" and wrong["head"] != right["head"]
    assert "embedding → block → logits" in right["why"] and str(TOPIC.answer(r).numbers["v"]) in wrong["why"]

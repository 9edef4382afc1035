"""serial-vs-parallel's question is answered by the run's own operation counts: the RNN's chain gains the same
number of operations with every added position (its count grows linearly with n), one attention layer's count
does not change, and counts that grew alike, or not at all, would make another option right."""

from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS

pytestmark = pytest.mark.slow  # the lesson times both layers

TOPIC = TOPICS["serial-vs-parallel"]


@pytest.fixture(scope="module")
def r():
    return result("serial-vs-parallel", **TOPIC.quick)


def test_at_quick_settings_the_rnn_s_chain_grows_and_attention_s_does_not(r):
    answer = TOPIC.answer(r)
    n = answer.numbers
    assert answer.option == "a"
    assert (n["n0"], n["n1"]) == (r.points[0].n, r.params["n_max"]) and n["n1"] == 2 * n["n0"]
    per_step, rest = divmod(n["rnn1"] - n["rnn0"], n["n1"] - n["n0"])
    assert per_step >= 1 and rest == 0  # the same operations once per position: linear in n
    assert n["attn1"] == n["attn0"]
    assert (r.points[-1].rnn_path, r.points[-1].attention_path) == (n["n1"] - 1, 1)  # the path agrees


@pytest.mark.parametrize(("attention_grows", "rnn_grows", "option"), [(True, True, "b"), (False, False, "c")])
def test_other_counts_make_another_option_right(r, attention_grows, rnn_grows, option):
    first, last = r.points[0], r.points[-1]
    other = replace(
        last,
        rnn_ops=last.rnn_ops if rnn_grows else first.rnn_ops,
        attention_ops=first.attention_ops + (last.rnn_ops - first.rnn_ops if attention_grows else 0),
    )
    assert TOPIC.answer(replace(r, points=[*r.points[:-1], other])).option == option


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_counted_operations(r, lang):
    right, wrong = TOPIC.verdict(r, "a", lang), TOPIC.verdict(r, "b", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "a" and wrong["head"] != right["head"]
    rnn1 = str(r.points[-1].rnn_ops)
    assert rnn1 in right["why"] and rnn1 in wrong["why"]

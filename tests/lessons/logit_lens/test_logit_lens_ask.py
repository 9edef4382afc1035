"""logit-lens's question is answered by the run's own lens: the layer from which the answer stays on top. At QUICK
the answer, the poem's own next character, is on top from block 1 of 4; the layer agrees with the ranks listed
layer by layer, and other layers make another option right."""

from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS

pytestmark = pytest.mark.slow  # trains the lesson's model (at QUICK, from the suite's shared store)

TOPIC = TOPICS["logit-lens"]


@pytest.fixture(scope="module")
def r():
    return result("logit-lens", **TOPIC.quick)


def test_at_quick_settings_the_answer_is_on_top_in_the_first_half_of_the_blocks(r):
    answer = TOPIC.answer(r)
    assert answer.option == "b"
    n = answer.numbers
    assert n["answer"] == r.expected == "光"  # the poem's next character: 床前明月光
    assert n["layers"] == 4 and 1 <= n["settled"] <= 2 and n["rank0"] > 1
    # the first layer from which every rank the page's table lists is 1
    ranks = [row.answer_rank for row in r.rows]
    assert ranks == r.answer_ranks and ranks[-1] == 1
    assert n["settled"] == min(l for l in range(len(ranks)) if all(x == 1 for x in ranks[l:]))


@pytest.mark.parametrize(("settled", "option"), [(0, "a"), (3, "c"), (4, "d")])
def test_another_layer_makes_another_option_right(r, settled, option):
    moved = replace(r, trained=replace(r.trained, settled=settled, spare=r.n_layers - settled))
    assert TOPIC.answer(moved).option == option
    assert TOPIC.answer(r).option == "b"  # the shared result is untouched


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_layer_measured(r, lang):
    right, wrong = TOPIC.verdict(r, "b", lang), TOPIC.verdict(r, "d", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "b" and wrong["head"] != right["head"]
    n = TOPIC.answer(r).numbers
    for why in (right["why"], wrong["why"]):
        assert n["answer"] in why and str(n["rank0"]) in why

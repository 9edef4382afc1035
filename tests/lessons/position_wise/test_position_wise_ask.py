"""position-wise's question is answered by the run's own Jacobians: off the diagonal the FFN's, LayerNorm's and
the residual's blocks are exactly 0 (read again from the shown grids) while attention's are not, and the lesson's
own bug (the FFN reads its neighbour) makes "yes" right."""

from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS

TOPIC = TOPICS["position-wise"]


@pytest.fixture(scope="module")
def r():
    return result("position-wise", **TOPIC.quick)


def test_at_quick_settings_only_attention_crosses_positions(r):
    answer = TOPIC.answer(r)
    assert answer.option == "b"
    assert answer.numbers["ffn"] == answer.numbers["layernorm"] == answer.numbers["residual"] == 0.0
    assert answer.numbers["attention"] > 0.0


def test_the_shown_grids_agree_with_the_answer(r):
    for layer in r.layers:
        grid = layer.block_norms
        off = max(grid[i][j] for i in range(len(grid)) for j in range(len(grid)) if i != j)
        assert off == layer.off_diagonal_max


def test_the_bug_makes_another_option_right():
    bugged = result("position-wise", bug=True, **TOPIC.quick)  # an instant lesson: the FFN reads x_i + x_{i-1}
    answer = TOPIC.answer(bugged)
    assert answer.option == "a" and answer.numbers["ffn"] > 0.0


def test_an_off_diagonal_block_in_layernorm_alone_is_enough(r):
    layers = [replace(x, off_diagonal_max=1e-3) if x.layer == "layernorm" else x for x in r.layers]
    assert TOPIC.answer(replace(r, layers=layers)).option == "a"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_measured_blocks(r, lang):
    right, wrong = TOPIC.verdict(r, "b", lang), TOPIC.verdict(r, "a", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "b" and wrong["head"] != right["head"]
    attention = f"{TOPIC.answer(r).numbers['attention']:.3g}"
    assert attention in right["why"] and attention in wrong["why"]

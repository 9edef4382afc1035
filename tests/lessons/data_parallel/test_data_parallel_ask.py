"""data-parallel's question is answered by the run itself: the two ranks end within fp32 rounding of the one
process (a few units in the last place of the weights, torch's float32 epsilon), far closer than ranks that skip
the all-reduce; a run whose weights drifted would make another option right."""

from dataclasses import replace

import pytest
import torch
from results import result

from attnlab.lessons.explain import TOPICS

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.slow,
]  # starts two processes that train

TOPIC = TOPICS["data-parallel"]


@pytest.fixture(scope="module")
def r():
    return result("data-parallel", **TOPIC.quick)


def test_at_quick_settings_the_weights_are_the_same_up_to_rounding(r):
    answer = TOPIC.answer(r)
    assert answer.option == "a"
    diff = answer.numbers["diff"]
    assert diff == max(gap.ddp for gap in r.run.params)  # the worst tensor of the per-tensor table
    assert answer.numbers["alone"] == max(gap.alone for gap in r.run.params)
    assert diff <= 4 * torch.finfo(torch.float32).eps  # a few ulps of a weight near 1
    assert answer.numbers["alone"] > 1000 * diff


@pytest.mark.parametrize(("diff", "option"), [(1e-3, "b"), (1.0, "c")])
def test_other_numbers_make_another_option_right(r, diff, option):
    drifted = replace(r, run=replace(r.run, weight_diff=diff))
    assert TOPIC.answer(drifted).option == option


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_measured_difference(r, lang):
    right, wrong = TOPIC.verdict(r, "a", lang), TOPIC.verdict(r, "b", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "a" and wrong["head"] != right["head"]
    diff = f"{TOPIC.answer(r).numbers['diff']:.3g}"
    assert diff in right["why"] and diff in wrong["why"]

"""scale's question is answered by the lab's own count: GPT-3's training compute, 6·N·D with N counted from its
configuration, lands nearest 3×10²³ FLOPs, as the paper publishes; a compute a thousand times larger or smaller
makes another option right."""

from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS

TOPIC = TOPICS["scale"]


@pytest.fixture(scope="module")
def r():
    return result("scale", **TOPIC.quick)


def test_at_quick_settings_gpt3_took_about_3e23_flops(r):
    answer = TOPIC.answer(r)
    assert answer.option == "c"
    n = answer.numbers
    # Brown et al. 2020: 175B parameters (the lab counts within 1%), 300B tokens, 3.14e23 FLOPs
    assert n["params"] == pytest.approx(175e9, rel=0.01) and n["tokens"] == 300e9
    assert n["flops"] == 6 * n["params"] * n["tokens"] == pytest.approx(3.14e23, rel=0.01)
    assert n["published"] == 3.14e23


@pytest.mark.parametrize(("factor", "option"), [(1e-6, "a"), (1e-3, "b"), (1e3, "d")])
def test_another_compute_makes_another_option_right(r, factor, option):
    rows = [
        replace(x, train_flops_6nd=x.train_flops_6nd * factor) if x.name == "GPT-3 175B" else x for x in r.published
    ]
    assert TOPIC.answer(replace(r, published=rows)).option == option
    assert TOPIC.answer(r).option == "c"  # the shared result is untouched


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_compute_counted(r, lang):
    right, wrong = TOPIC.verdict(r, "c", lang), TOPIC.verdict(r, "b", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "c" and wrong["head"] != right["head"]
    flops = f"{TOPIC.answer(r).numbers['flops']:.3g}"
    assert flops in right["why"] and flops in wrong["why"]

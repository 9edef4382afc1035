"""forms' question is answered by the blocks the lesson built: a GPT block holds one attention module and no
cross-attention (the encoder-decoder's decoder block holds two); a GPT block given cross-attention would make
the other option right."""

from dataclasses import replace

import pytest
from results import result

from attnlab.lessons.explain import TOPICS

TOPIC = TOPICS["forms"]


@pytest.fixture(scope="module")
def r():
    return result("forms", **TOPIC.quick)


def test_at_quick_settings_the_gpt_block_has_no_cross_attention(r):
    answer = TOPIC.answer(r)
    assert answer.option == "b"
    assert answer.numbers["gpt_attn"] == 1 and answer.numbers["dec_attn"] == 2  # the modules of the built models
    gpt = next(f for f in r.forms if f.name == "decoder-only")
    assert all(m.matches and m.name == "causal" for m in gpt.masks)  # and its one attention is causal


def test_a_gpt_block_with_cross_attention_makes_the_other_option_right(r):
    crossed = ["attn", "cross_attn"]
    gpt = lambda f: [replace(b, attention_modules=crossed, has_cross_attention=True) for b in f.blocks]  # noqa: E731
    forms = [replace(f, blocks=gpt(f)) if f.name == "decoder-only" else f for f in r.forms]
    answer = TOPIC.answer(replace(r, forms=forms))
    assert answer.option == "a" and answer.numbers["gpt_attn"] == 2


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_verdict_says_right_or_wrong_with_the_counted_modules(r, lang):
    right, wrong = TOPIC.verdict(r, "b", lang), TOPIC.verdict(r, "a", lang)
    assert right["correct"] and not wrong["correct"]
    assert wrong["answer"] == "b" and wrong["head"] != right["head"]
    assert "cross_attn" in right["why"] and "1" in right["why"] and "2" in wrong["why"]

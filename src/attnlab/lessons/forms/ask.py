"""Asked first: does a decoder-only (GPT) block hold cross-attention? Read from the attention modules of the GPT
block the lesson built."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b")  # a: yes, it is half of an encoder-decoder; b: no, only causal self-attention and the FFN


def answer(r) -> Answer:
    by = {f.name: f for f in r.forms}
    gpt, dec = by["decoder-only"].blocks[0], by["encoder-decoder"].blocks[-1]  # the encoder-decoder's decoder block
    option = "a" if gpt.has_cross_attention else "b"
    return Answer(
        option,
        {
            "gpt_attn": len(gpt.attention_modules),
            "gpt_names": ", ".join(gpt.attention_modules),
            "dec_attn": len(dec.attention_modules),
            "dec_names": ", ".join(dec.attention_modules),
        },
        key="gpt_attn",
    )

"""Asked first: does a causal GPT give the shared first word the same vector in both sentences? Read from the
largest L2 difference between the two at any position of the word and any layer (exactly 0: the same)."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b")  # a: identical; b: different, it reads what follows


def answer(r) -> Answer:
    gpt_diff = max(x.causal_max_l2 for x in r.layers)
    option = "a" if gpt_diff == 0 else "b"
    return Answer(option, {"word": r.word, "gpt_diff": gpt_diff, "enc_diff": r.layers[-1].encoder_l2}, key="gpt_diff")

"""Asked first: at the longest length trained on, which of the three translators gets the fewest characters right?
Read from the per-character accuracy on held-out strings of that length (the lowest is the answer)."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b", "c")  # a: no attention; b: Bahdanau; c: the Transformer
MODEL = {"a": "no_attention", "b": "bahdanau", "c": "transformer"}


def answer(r) -> Answer:
    L = r.train_lengths[-1]
    at = r.lengths.index(L)
    acc = {o: r.token_accuracy[kind][at] for o, kind in MODEL.items()}
    option = min(OPTIONS, key=lambda o: acc[o])
    numbers = {"L": L, "none": acc["a"], "bahdanau": acc["b"], "transformer": acc["c"]}
    return Answer(option, numbers, key={"a": "none", "b": "bahdanau", "c": "transformer"}[option])  # the fewest

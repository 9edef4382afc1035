"""Asked first: about how many floating-point operations did training GPT-3 take? Read from the lab's own count of
its parameters times its published training tokens, 6·N·D, placed at the nearest option's power of ten."""

import math

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b", "c", "d")  # about 3e17, 3e20, 3e23, 3e26 FLOPs
GUESSES = dict(zip(OPTIONS, (3e17, 3e20, 3e23, 3e26)))
MODEL = "GPT-3 175B"


def answer(r) -> Answer:
    row = next(x for x in r.published if x.name == MODEL)
    flops = row.train_flops_6nd  # 6 · counted · tokens
    option = min(OPTIONS, key=lambda o: abs(math.log10(flops / GUESSES[o])))
    numbers = {"params": row.counted, "tokens": row.tokens, "flops": flops, "published": row.published_train_flops}
    return Answer(option, numbers, key="flops")

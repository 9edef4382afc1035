"""Asked first: h heads of width d_model/h against one of width d_model, how many parameters? Read from the counts."""

import math

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b", "c")  # a: the same; b: h times as many; c: 1/h as many


def answer(r) -> Answer:
    one, many, h = r.one_head.params, r.many_heads.params, r.many_heads.n_heads
    ratio = many / one  # counted on the two modules
    # the option whose ratio (1, h, 1/h) is nearest on a log scale; with h = 1 all three agree: "the same"
    option = min(zip(OPTIONS, (1, h, 1 / h)), key=lambda o: abs(math.log(ratio / o[1])))[0]
    return Answer(option, {"h": h, "one": one, "many": many, "ratio": ratio}, key="ratio")

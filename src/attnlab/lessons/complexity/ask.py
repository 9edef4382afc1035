"""Asked first: which part of a block's FLOPs is larger, the n²d or the nd² terms? Read from the counted FLOPs."""

from attnlab.lessons.common.ask import Answer

OPTIONS = (
    "a",
    "b",
    "c",
)  # a: attention's scores and weighted sum (n²d); b: projections and FFN (nd²); c: about the same
ALIKE = 0.05  # "about the same": the n²d terms' share within 5 points of a half (the larger at most ~1.22x the other)


def answer(r) -> Answer:
    counted = {check.part: check.counted for check in r.checks}  # FlopCounterMode on our own Block
    share = counted["scores+weighted_sum"] / counted["block"]
    option = "c" if abs(share - 0.5) <= ALIKE else "a" if share > 0.5 else "b"
    p = r.params
    numbers = {"n": p["n"], "d": p["d_model"], "share": share, "rest": 1 - share, "cross": r.crossover_block}
    return Answer(option, numbers, key="share")

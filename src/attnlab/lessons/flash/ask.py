"""Asked first: how does FlashAttention's result compare with plain attention's? Read from the largest difference
of their outputs (hand example and every n measured) and from how the tiled loop's peak memory grows with n."""

from attnlab.lessons.common.ask import Answer
from attnlab.lessons.flash.claims import EQUAL_LARGE_TOL, GROWTH_TOL

OPTIONS = ("a", "b", "c")  # a: the same, without the n×n matrix; b: an approximation; c: the same, memory still n²


def answer(r) -> Answer:
    diff = max(r.hand.max_abs_diff, *(pt.max_abs_diff for pt in r.memory))
    top = r.memory[-1]
    if diff > EQUAL_LARGE_TOL:
        option = "b"
    elif abs(r.tiled_growth - 1) <= GROWTH_TOL:
        option = "a"
    else:
        option = "c"
    return Answer(
        option,
        {
            "diff": diff,
            "tiled_growth": r.tiled_growth,
            "plain_growth": r.plain_growth,
            "n": top.n,
            "tiled_mib": top.tiled_bytes / 2**20,
            "plain_mib": top.plain_bytes / 2**20,
        },
        key="diff",
    )

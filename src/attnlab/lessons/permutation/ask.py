"""Asked first: without positions, how do 明's outputs in 明月 and 月明 compare? Read from the pair's difference."""

from attnlab.lessons.common.ask import Answer
from attnlab.lessons.permutation.lesson import ROUNDING

OPTIONS = ("a", "b", "c")  # a: exactly the same; b: slightly different; c: very different
VERY = 0.1  # "very different": by a tenth of the largest output entry or more


def answer(r) -> Answer:
    plain, positioned = r.pair["without_positions"], r.pair["with_positions"]
    diff, scale = plain["max_diff"], plain["scale"]
    option = "a" if diff <= ROUNDING else "c" if diff >= VERY * scale else "b"
    return Answer(option, {"plain": diff, "scale": scale, "positioned": positioned["max_diff"]}, key="plain")

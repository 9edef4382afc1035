"""Asked first: the same sample in another batch: does its LayerNorm output change, does its BatchNorm output? Read
from the largest changes the lesson measured (changed: by at least DIFFERS, on outputs of unit scale)."""

from attnlab.lessons.common.ask import Answer
from attnlab.lessons.norms.lesson import DIFFERS

OPTIONS = ("a", "b", "c", "d")  # a: LN stays, BN changes; b: both change; c: neither; d: LN changes, BN stays
BY_CHANGE = {(False, True): "a", (True, True): "b", (False, False): "c", (True, False): "d"}


def answer(r) -> Answer:
    ln_moves, bn_moves = r.ln_diff >= DIFFERS, r.bn_diff >= DIFFERS  # training-mode BatchNorm
    return Answer(
        BY_CHANGE[ln_moves, bn_moves],
        {"batch": r.params["batch"], "ln_diff": r.ln_diff, "bn_diff": r.bn_diff},
        key="bn_diff",
    )

"""Asked first: what does the change of a shifted position's encoding depend on? Read from the rotation check."""

from attnlab.lessons.common.ask import Answer
from attnlab.lessons.positional.lesson import ROTATION_TOL

OPTIONS = ("a", "b", "c")  # a: on Δ alone; b: on Δ and the starting position; c: on nothing regular


def answer(r) -> Answer:
    # One fixed R(Δ) per pair of dims carries every checked PE[pos] to PE[pos + Δ]: the change depends on Δ alone.
    option = "a" if r.max_rotation_error <= ROTATION_TOL else "b"
    p = r.params
    return Answer(
        option, {"delta": p["delta"], "last": p["n_check"] - 1, "max_error": r.max_rotation_error}, key="max_error"
    )

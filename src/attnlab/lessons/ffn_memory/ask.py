"""Asked first: knock out one FFN neuron; where does the next-token prediction suffer more, where it fires or where
it is quiet? Read from the mean knockout costs against the lesson's noise margin (claim fires_hurts)."""

from attnlab.lessons.common.ask import Answer
from attnlab.lessons.ffn_memory.lesson import FLOOR

OPTIONS = ("a", "b", "c")  # a: where it fires; b: where it is quiet; c: about the same (within noise)


def answer(r) -> Answer:
    margin = next(c.margin for c in r.claims if c.id == "fires_hurts")  # 2 standard errors, at least FLOOR
    lead = r.hurt_fire - r.hurt_quiet
    option = "a" if lead > margin else "b" if lead < -margin else "c"
    numbers = {"n": r.trained.alive, "fire": r.hurt_fire, "quiet": r.hurt_quiet, "margin": margin, "floor": FLOOR}
    return Answer(option, numbers, key="fire")

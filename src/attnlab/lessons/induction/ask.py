"""Asked first: which of the two models, trained alike, ends with an induction head? Read from each model's best
head at the last logged step, against the lesson's THRESHOLD."""

from attnlab.lessons.common.ask import Answer
from attnlab.lessons.induction.lesson import THRESHOLD, final_best

OPTIONS = ("a", "b", "c", "d")  # a: only the 2-layer model; b: only the 1-layer; c: both; d: neither


def answer(r) -> Answer:
    two, one = final_best(r.prefix_matching), final_best(r.one_layer.prefix_matching)
    forms = (two >= THRESHOLD, one >= THRESHOLD)
    option = {(True, False): "a", (False, True): "b", (True, True): "c", (False, False): "d"}[forms]
    numbers = {"steps": r.steps[-1], "two": two, "one": one, "threshold": THRESHOLD, "chance": r.chance_prefix}
    return Answer(option, numbers, key="two")

"""Asked first: how often does a model that only learnt to copy answer a fresh mapping from 8 examples? Read from
the 2-layer model's share right at the most shots, against chance and the ceiling."""

from attnlab.lessons.common.ask import Answer
from attnlab.lessons.prompting.lesson import CHANCE_MARGIN

OPTIONS = ("a", "b", "c")  # a: about chance; b: far above chance, near the ceiling; c: every time
EVERY_TIME = 0.98


def answer(r) -> Answer:
    acc, ceiling = r.accuracy["two_layer"][-1], r.accuracy["ceiling"][-1]
    option = "c" if acc >= EVERY_TIME else "b" if acc - r.chance >= CHANCE_MARGIN else "a"
    numbers = {"steps": r.params["steps"], "shots": r.shots[-1], "acc": acc, "chance": r.chance, "ceiling": ceiling}
    return Answer(option, numbers, key="acc")

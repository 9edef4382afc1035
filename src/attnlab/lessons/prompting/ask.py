"""Asked first: how often does a model that only learnt to copy answer a fresh mapping from the examples in its
prompt? Read from the 2-layer model's share right at the most shots: how far it has come from chance toward the
ceiling (what the examples allow)."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b", "c", "d")  # a: about chance; b: above chance, far from the ceiling; c: near the ceiling; d: always
EVERY_TIME = 0.98
NEAR_CHANCE = 0.05  # four standard errors of a share near 0.1 over 500 prompts
NEAR_CEILING = 0.7  # of the way from chance to the ceiling


def answer(r) -> Answer:
    acc, ceiling = r.accuracy["two_layer"][-1], r.accuracy["ceiling"][-1]
    way = (acc - r.chance) / (ceiling - r.chance)  # how far from chance toward the ceiling
    if acc >= EVERY_TIME:
        option = "d"
    elif way >= NEAR_CEILING:
        option = "c"
    elif acc - r.chance >= NEAR_CHANCE:
        option = "b"
    else:
        option = "a"
    numbers = {"steps": r.params["steps"], "shots": r.shots[-1], "acc": acc, "chance": r.chance, "ceiling": ceiling}
    return Answer(option, {**numbers, "way": way}, key="acc")

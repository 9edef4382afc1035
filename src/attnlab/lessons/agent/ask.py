"""Asked first: a model that can neither calculate nor look a poem up learns to work one tool call at a time; how
often does it solve two-step tasks it never saw? Read from the agent's share solved at two steps."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b", "c", "d")  # a: as in one shot; b: better, under half; c: half to 0.9; d: above 0.9
NO_BETTER = 0.2  # within this of the single-shot model counts as no help (over five standard errors of a share of 200)
HALF, ALMOST_ALWAYS = 0.5, 0.9


def answer(r) -> Answer:
    i = r.steps_needed.index(2)
    acc, single, no_exec = r.success["agent"][i], r.success["single_shot"][i], r.success["no_exec"][i]
    if acc > ALMOST_ALWAYS:
        option = "d"
    elif acc >= HALF:
        option = "c"
    elif acc - single >= NO_BETTER:
        option = "b"
    else:
        option = "a"
    numbers = {"steps": r.params["steps"], "k": r.steps_needed[i], "acc": acc, "single": single, "no_exec": no_exec}
    return Answer(option, numbers, key="acc")

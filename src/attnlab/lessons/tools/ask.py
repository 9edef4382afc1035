"""Asked first: a model that cannot multiply learns to call a calculator; how often is its final answer right on
3-digit products it never saw? Read from the tool's share right at the longest trained length."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b", "c", "d")  # a: as if no tool; b: better, under half; c: half to 0.9; d: above 0.9
NO_BETTER = (
    0.2  # within this of the control counts as no help (more than four standard errors of a share over 200 questions)
)
HALF, ALMOST_ALWAYS = 0.5, 0.9


def answer(r) -> Answer:
    i = r.lengths.index(r.trained_digits)
    acc, control, no_exec = r.accuracy["tool"][i], r.accuracy["control"][i], r.accuracy["no_exec"][i]
    if acc > ALMOST_ALWAYS:
        option = "d"
    elif acc >= HALF:
        option = "c"
    elif acc - control >= NO_BETTER:
        option = "b"
    else:
        option = "a"
    numbers = {"steps": r.params["steps"], "d": r.lengths[i], "acc": acc, "control": control, "no_exec": no_exec}
    return Answer(option, numbers, key="acc")

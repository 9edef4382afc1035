"""Asked first: do two ranks averaging their gradients end with the one process's weights? Read from the run:
the largest weight difference against the weights' tolerance (fp32's, or ten times what rounding alone makes,
as the update claim reads it) and against the ranks that skip the all-reduce."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b", "c")  # a: the same, up to rounding; b: close but clearly different; c: entirely different


def answer(r) -> Answer:
    run = r.run
    if run.weight_diff <= r.tolerance:
        option = "a"
    elif run.weight_diff <= run.alone_diff:  # no farther than a rank that trains on its own half
        option = "b"
    else:
        option = "c"
    return Answer(
        option, {"steps": run.steps, "diff": run.weight_diff, "tol": r.tolerance, "alone": run.alone_diff}, key="diff"
    )

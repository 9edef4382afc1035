"""Asked first: against a dense model with as many parameters per token, is the MoE's loss lower? Decided as the
claim is: the evaluation losses, a lead of LOSS_MARGIN nats either way, else a tie."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b", "c")  # a: the MoE's is lower; b: the dense model's is lower; c: about the same


def answer(r) -> Answer:
    from attnlab.lessons.moe.lesson import LOSS_MARGIN

    by = {run.name: run for run in r.runs}
    moe, dense = by["moe"], by["dense_active"]
    lead = dense.loss - moe.loss  # > 0: the MoE is lower
    option = "a" if lead >= LOSS_MARGIN else "b" if -lead >= LOSS_MARGIN else "c"
    return Answer(
        option,
        {"active": moe.active_params, "moe": moe.loss, "dense": dense.loss, "margin": LOSS_MARGIN},
        key="moe",
    )

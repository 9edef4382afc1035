"""Asked first: with the chosen part off, is the causal loss higher, the same or lower than the intact model's?
Decided as the finding is: the paired difference over the seeds against its noise margin."""

from attnlab.lessons.common.ask import Answer
from attnlab.lessons.common.claims import status_of

OPTIONS = ("a", "b", "c")  # a: clearly higher; b: about the same; c: lower


def answer(r) -> Answer:
    from attnlab.lessons.break_it.claims import compare

    cmp = compare(r, lambda run: run.final_causal)  # ablated against intact, seed by seed
    way = status_of("above", cmp["a"], cmp["i"], cmp["margin"])
    option = {"shown": "a", "not_shown": "b", "contradicted": "c"}[way]
    return Answer(
        option,
        {"ablation": r.ablation, "ablated": cmp["a"], "intact": cmp["i"], "margin": cmp["margin"]},
        key="ablated",
    )

"""Asked first: from which layer on is the trained model's answer already the lens's top token? Read from the
answer's rank layer by layer (the lesson's `settled`), placed in the first or second half of the blocks."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b", "c", "d")  # a: layer 0 already; b: the first half of the blocks; c: the second half; d: the last


def answer(r) -> Answer:
    a, L = r.trained, r.n_layers
    if a.settled == 0:
        option = "a"
    elif a.settled == L:
        option = "d"
    else:
        option = "b" if 2 * a.settled <= L else "c"
    numbers = {
        "answer": a.answer,
        "rank0": a.ranks[0],
        "settled": a.settled,
        "layers": L,
        "untrained_settled": r.untrained.settled,
    }
    return Answer(option, numbers, key="settled")

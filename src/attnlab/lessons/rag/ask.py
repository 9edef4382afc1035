"""Asked first: the generator never trained on the held-out poems. Given a random poem in its context instead of the
retrieved one, how many of their second lines does it write exactly? Read from the run's recall (mean over seeds)."""

from attnlab.lessons.common.ask import Answer

OPTIONS = ("a", "b", "c")  # a: about as many (it knows poems); b: almost none (it copies the context); c: about half
NONE = 0.1  # at most this share counts as almost none


def answer(r) -> Answer:
    retrieved, random = r.recall["retrieved"], r.recall["random"]
    if random <= NONE:
        option = "b"
    elif abs(random - retrieved) <= NONE:
        option = "a"
    else:
        option = "c"
    numbers = {"retrieved": retrieved, "random": random, "alone": r.recall["alone"], "n": r.n_test}
    return Answer(option, numbers, key="random")

"""Asked first: what happens to the vectors of characters used alike? Read from the distributional claim's numbers
(Spearman of vector cosine with context similarity, trained against its twin trained on the characters shuffled,
by the lesson's margin) and from
the neighbours' cosines (all near 0: orthogonal, as one-hot)."""

import math

from attnlab.lessons.common.ask import Answer
from attnlab.lessons.word2vec.claims import SPREADS

OPTIONS = ("a", "b", "c")  # a: their cosine grows; b: it becomes 0, as one-hot; c: nothing, the vectors stay random
NEAR_ZERO = 0.05  # "cosine 0": not one listed neighbour's |cos| reaches it


def answer(r) -> Answer:
    corr, corr0, null, sd = r.context_corr, r.context_corr_init, r.context_corr_shuffled, r.context_corr_random_sd
    defined = None not in (corr, corr0, null) and sd is not None and sd > 0
    margin = SPREADS * sd if defined else math.nan
    top_cos = max((abs(n.cos) for q in r.queries for n in q.neighbours), default=0.0)
    if top_cos < NEAR_ZERO:
        option = "b"
    elif defined and corr - null >= margin:
        option = "a"
    else:
        option = "c"
    nan = lambda x: math.nan if x is None else x  # noqa: E731  an undefined correlation
    return Answer(
        option,
        {
            "n": r.n_compared,
            "steps": r.params["train_steps"],
            "start": nan(corr0),
            "trained": nan(corr),
            "null": nan(null),
            "margin": margin,
            "top_cos": top_cos,
        },
        key="trained",
    )

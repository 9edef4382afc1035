"""Asked first: does training pull the embeddings of characters used alike together? Read from the rank
correlation of embedding cosine with context similarity, trained against the same model trained alike on the
characters shuffled (the lesson's margin: two standard deviations of the difference of two random tables), and
from whether the embeddings are orthogonal."""

import math

from attnlab.lessons.common.ask import Answer
from attnlab.lessons.one_hot.claims import NOT_ORTHOGONAL, SPREADS

OPTIONS = ("a", "b", "c")  # a: yes, closer the more alike; b: no pattern beyond the shuffled twin; c: orthogonal


def answer(r) -> Answer:
    corr, corr0, null = r.context_corr, r.context_corr_init, r.context_corr_shuffled
    spread = r.context_corr_spread
    defined = None not in (corr, corr0, null) and spread is not None and spread > 0
    margin = SPREADS * spread if defined else math.nan
    if r.dense_mean_cos - r.onehot_max_cos < NOT_ORTHOGONAL:
        option = "c"
    elif defined and corr - null >= margin:
        option = "a"
    else:
        option = "b"
    nan = lambda x: math.nan if x is None else x  # noqa: E731  an undefined correlation
    return Answer(
        option,
        {
            "n": r.n_frequent,
            "steps": r.params["train_steps"],
            "corr0": nan(corr0),
            "corr": nan(corr),
            "null": nan(null),
            "margin": margin,
            "mean_cos": r.dense_mean_cos,
            "onehot_cos": r.onehot_max_cos,
        },
        key="corr",
    )

"""The claims of `attnlab explain word2vec` (attnlab.lessons.common.claims) and the margins they are judged by.

The hand-written gradient is an identity: it meets autograd's to float64 rounding (GRAD_TOL). The other three
(neighbours share contexts, the distributional hypothesis, agreement with the GPT) each lead their strongest null,
the twins trained alike on the characters shuffled, by SPREADS standard deviations of the value over N_RANDOM
random tables: three standard deviations of the difference between two random tables' values. With `shuffle` on,
or at 0 steps, the twins are the models themselves: a tie by construction, never shown and never contradicted.
The untrained start is in each sentence too, never the only control.
"""

from __future__ import annotations

import math

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead, within

N_RANDOM = 32  # random tables drawn to measure what chance moves each number
SPREADS = 3 * math.sqrt(2)  # three standard deviations of the difference of two random tables' values
GRAD_TOL = 1e-10  # float64: the hand gradient and autograd's differ by rounding alone


def claims_of(r, lang: str) -> list[Claim]:
    """The hand gradient is an identity (autograd's to rounding); the other three lead the twins trained on the
    characters shuffled by 3√2 random-table spreads. r: a Word2VecResult (lesson.py)."""

    def c(name: str) -> str:
        return t(f"explain.word2vec.control.{name}", lang)

    def vs(id_: str, measured, null, start, sd, values: dict) -> Claim:
        defined = None not in (measured, null, start) and sd is not None and sd > 0
        margin = SPREADS * sd if defined else 1.0  # undefined: 0 against 0, a tie
        key = f"explain.word2vec.claim.{id_}" if defined else "explain.word2vec.claim.undefined"
        return lead(
            id_,
            t(
                key,
                lang,
                measured=measured or 0.0,
                null=null or 0.0,
                start=start or 0.0,
                margin=margin,
                sd=sd or 0.0,
                k=N_RANDOM,
                n=r.n_compared,
                top_k=r.params["top_k"],
                steps=r.params["train_steps"],
                gpt_steps=r.params["gpt_steps"],
                what=t(f"explain.word2vec.what.{id_}", lang),
            ),
            lang,
            measured=measured if defined else 0.0,
            baseline=null if defined else 0.0,
            margin=margin,
            control=c("shuffled" if id_ != "agrees_with_gpt" else "gpt_shuffled"),
            values=values,
            hint=t("explain.word2vec.hint", lang),
        )

    return [
        within(
            "hand_gradient",
            t("explain.word2vec.claim.hand_gradient", lang, err=r.gradient_error, tol=GRAD_TOL),
            lang,
            measured=r.gradient_error,
            expected=0.0,
            tol=GRAD_TOL,
            control=c("autograd"),
            values={"max_abs_difference": r.gradient_error},
        ),
        vs(
            "neighbours_share_contexts",
            r.neighbour_score,
            r.neighbour_score_shuffled,
            r.neighbour_score_init,
            r.neighbour_score_random_sd,
            {
                "trained": r.neighbour_score,
                "shuffled": r.neighbour_score_shuffled,
                "start": r.neighbour_score_init,
                "random": r.neighbour_score_random,
                "random_sd": r.neighbour_score_random_sd,
                "onehot": r.neighbour_score_onehot,
            },
        ),
        vs(
            "distributional",
            r.context_corr,
            r.context_corr_shuffled,
            r.context_corr_init,
            r.context_corr_random_sd,
            {
                "trained": r.context_corr,
                "shuffled": r.context_corr_shuffled,
                "start": r.context_corr_init,
                "random": r.context_corr_random,
                "random_sd": r.context_corr_random_sd,
                "onehot": None,
            },
        ),
        vs(
            "agrees_with_gpt",
            r.gpt_corr,
            r.gpt_corr_shuffled,
            r.gpt_corr_init,
            r.gpt_corr_random_sd,
            {
                "trained": r.gpt_corr,
                "shuffled": r.gpt_corr_shuffled,
                "gpt_start": r.gpt_corr_init,
                "random": r.gpt_corr_random,
                "random_sd": r.gpt_corr_random_sd,
            },
        ),
    ]


__all__ = ["claims_of", "N_RANDOM", "SPREADS", "GRAD_TOL"]

"""The claims of `attnlab explain one-hot` (attnlab.lessons.common.claims) and the margins they are judged by.

One-hot orthogonality is an identity (the closed form, tolerance 0); "dense vectors are not orthogonal" leads
one-hot's exact 0 by NOT_ORTHOGONAL; "training pulls characters used alike together" leads its strongest null, the
same model trained alike on the characters shuffled, by SPREADS standard deviations of random tables' correlation.
"""

from __future__ import annotations

import math

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead, within

NOT_ORTHOGONAL = 0.02  # "not orthogonal": a mean |cos| at least 0.02 above one-hot's 0 (random d = 128 vectors: ~0.07)
N_RANDOM_TABLES = 32  # random tables drawn to measure how much the correlation varies by chance
SPREADS = 2 * math.sqrt(2)  # two standard deviations of the difference of two random tables' correlations


def claims_of(
    lang: str,
    V: int,
    d: int,
    steps: int,
    onehot_max: float,
    onehot_norm: float,
    width: int,
    dense_mean: float,
    dense_max: float,
    init_mean: float,
    corr: float | None,
    corr0: float | None,
    corr_null: float | None,
    spread: float | None,
    n_f: int,
) -> list[Claim]:
    """One-hot orthogonality is an identity; "dense vectors are not orthogonal" leads one-hot's 0 by a stated gap;
    "training pulled characters used alike together" leads the correlation of its twin trained alike on the
    characters shuffled by two standard deviations of the difference between two random tables' correlations, so
    it is never shown at 0 steps nor on the shuffled characters themselves (the two tables are one)."""

    def c(name: str) -> str:
        return t(f"explain.one_hot.control.{name}", lang)

    # one number for three facts: the largest |cos|, plus how far the length and the width are from 1 and |V|
    off = onehot_max + abs(onehot_norm - 1.0) + abs(width - V)
    dims = t("explain.one_hot.dims.fewer" if d < V else "explain.one_hot.dims.not_fewer", lang, d=d, V=V)
    claims = [
        within(
            "onehot_orthogonal",
            t("explain.one_hot.claim.onehot", lang, V=V, pairs=V * (V - 1) // 2, cos=onehot_max),
            lang,
            measured=off,
            expected=0.0,
            tol=0.0,
            control=c("closed_form"),
            values={"max_abs_cos": onehot_max, "norm": onehot_norm, "width": width, "vocab_size": V},
        ),
        lead(
            "dense_not_orthogonal",
            t(
                "explain.one_hot.claim.dense",
                lang,
                dims=dims,
                mean=dense_mean,
                max=dense_max,
                init=init_mean,
                steps=steps,
                margin=NOT_ORTHOGONAL,
            ),
            lang,
            measured=dense_mean,
            baseline=onehot_max,
            margin=NOT_ORTHOGONAL,
            control=c("onehot_cos"),
            values={
                "mean_abs_cos": dense_mean,
                "max_abs_cos": dense_max,
                "init_mean_abs_cos": init_mean,
                "d": d,
                "vocab_size": V,
            },
        ),
    ]
    defined = None not in (corr, corr0, corr_null) and spread is not None and spread > 0
    margin = SPREADS * spread if defined else 1.0  # undefined: 0 against 0, a tie, never shown
    claims.append(
        lead(
            "training_context",
            t(
                "explain.one_hot.claim.context" if defined else "explain.one_hot.claim.context_undefined",
                lang,
                steps=steps,
                corr=corr or 0.0,
                corr0=corr0 or 0.0,
                null=corr_null or 0.0,
                margin=margin,
                spread=spread or 0.0,
                k=N_RANDOM_TABLES,
                F=n_f,
            ),
            lang,
            measured=corr if defined else 0.0,
            baseline=corr_null if defined else 0.0,
            margin=margin,
            control=c("shuffled"),
            values={
                "context_corr": corr,
                "context_corr_shuffled": corr_null,
                "context_corr_init": corr0,
                "random_spread": spread,
                "steps": steps,
            },
            hint=t("explain.one_hot.hint.context", lang),
        )
    )
    return claims

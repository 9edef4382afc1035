"""The claims of `attnlab explain seq2seq`: comparisons that can fail (attnlab.lessons.common.claims), made from a
Seq2SeqResult's numbers alone.

The bottleneck is an effect size at the longest trained length: each attention model's exact-match accuracy
minus the one without attention, over the seeds, against a margin of GAP (20 points) or two standard errors,
whichever is larger (gap_stats); the same margin judges how far the model without attention falls from the
shortest length to that one. Two are facts of the graph, true untrained too: the no-attention decoder reads only
the encoder's final state, and Bahdanau's weights are the formula done by hand (to IDENTITY_TOL). Each model's
alignment is scored on its own against a uniform map's: it must clear it by half the way to a perfect score.
"""

from __future__ import annotations

import functools
import math

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead, within

GAP = 0.20  # an accuracy effect must be at least 20 points (and two standard errors) to count
IDENTITY_TOL = 1e-5  # float32 hand computations against the library's


def gap_stats(r, better: str, worse: str, at_better: int, at_worse: int) -> dict:
    """Accuracy of `better` at length index at_better minus `worse` at at_worse, over the seeds of r (a
    Seq2SeqResult), with the margin it must clear: GAP, or two standard errors, whichever is larger. The standard
    error is the larger of the binomial one over every test string (n_test per seed) and, with two seeds or more,
    the seeds' spread."""
    a = [run[at_better] for run in r.accuracy_by_seed[better]]
    b = [run[at_worse] for run in r.accuracy_by_seed[worse]]
    k, n = len(a), len(a) * r.params["n_test"]
    pa, pb = sum(a) / k, sum(b) / k
    se = math.sqrt(pa * (1 - pa) / n + pb * (1 - pb) / n)
    gaps = [x - y for x, y in zip(a, b)]
    if k > 1:
        mean = sum(gaps) / k
        se = max(se, math.sqrt(sum((d - mean) ** 2 for d in gaps) / (k - 1) / k))
    return {"better": pa, "worse": pb, "gap": pa - pb, "se": se, "margin": max(GAP, 2 * se), "by_seed": gaps}


def _control(lang: str, name: str, **fields) -> str:
    return t(f"explain.seq2seq.control.{name}", lang, **fields)


def claims_of(r, lang: str) -> list[Claim]:
    """The claims of a Seq2SeqResult, from its numbers alone (the null tests feed numbers where an effect is absent)."""
    L = r.train_lengths[-1]
    at = r.lengths.index(L)
    c = functools.partial(_control, lang)
    seeds = len(r.seeds)
    over = (
        t("explain.seq2seq.over.one", lang, seed=r.seeds[0])
        if seeds == 1
        else t("explain.seq2seq.over.many", lang, n=seeds)
    )
    hint = t("explain.seq2seq.hint.trained", lang)
    claims = []
    for cid, kind in (("bottleneck", "bahdanau"), ("bottleneck_cross", "transformer")):
        s = gap_stats(r, kind, "no_attention", at, at)
        claims.append(
            lead(
                cid,
                t(
                    f"explain.seq2seq.claim.{cid}",
                    lang,
                    L=L,
                    att=s["better"],
                    none=s["worse"],
                    over=over,
                    margin=s["margin"] * 100,
                ),
                lang,
                measured=s["better"],
                baseline=s["worse"],
                margin=s["margin"],
                control=c("no_attention", L=L),
                values={
                    "length": L,
                    "attention": s["better"],
                    "no_attention": s["worse"],
                    "gap": s["gap"],
                    "gap_by_seed": s["by_seed"],
                    "standard_error": s["se"],
                    "seeds": seeds,
                },
                hint=hint,
            )
        )
    s = gap_stats(r, "no_attention", "no_attention", 0, at)
    n0 = r.lengths[0]
    claims.append(
        lead(
            "falls",
            t(
                "explain.seq2seq.claim.falls",
                lang,
                n0=n0,
                a0=s["better"],
                L=L,
                aL=s["worse"],
                over=over,
                margin=s["margin"] * 100,
            ),
            lang,
            measured=s["worse"],
            baseline=s["better"],
            margin=s["margin"],
            lower=True,
            control=c("short", n0=n0),
            values={
                "short": n0,
                "length": L,
                "accuracy_short": s["better"],
                "accuracy_long": s["worse"],
                "drop": s["gap"],
                "drop_by_seed": s["by_seed"],
                "standard_error": s["se"],
                "seeds": seeds,
            },
            hint=hint,
        )
    )
    k = r.checks
    claims.append(
        within(
            "final_only",
            t("explain.seq2seq.claim.final_only", lang, others=k["others_change"], last=k["last_change"]),
            lang,
            measured=k["others_change"],
            expected=0.0,
            tol=0.0,
            control=c("final_only"),
            values={"others_change": k["others_change"], "last_change": k["last_change"]},
        )
    )
    err = max(k["alpha_sum_error"], k["alpha_hand_error"], k["context_hand_error"])
    claims.append(
        within(
            "alpha",
            t(
                "explain.seq2seq.claim.alpha",
                lang,
                sum_err=k["alpha_sum_error"],
                hand=k["alpha_hand_error"],
                ctx=k["context_hand_error"],
                tol=IDENTITY_TOL,
            ),
            lang,
            measured=err,
            expected=0.0,
            tol=IDENTITY_TOL,
            control=c("alpha"),
            values={
                "alpha_sum_error": k["alpha_sum_error"],
                "alpha_hand_error": k["alpha_hand_error"],
                "context_hand_error": k["context_hand_error"],
            },
        )
    )
    chance = r.chance_alignment
    need = (1 - chance) / 2  # at least halfway from a uniform map to a perfect one
    for cid, kind in (("alignment", "bahdanau"), ("alignment_cross", "transformer")):
        got = r.alignment_score[kind]
        claims.append(
            lead(
                cid,
                t(
                    f"explain.seq2seq.claim.{cid}",
                    lang,
                    score=got,
                    chance=chance,
                    over=over,
                    margin=need * 100,
                    lo=r.train_lengths[0],
                    hi=L,
                ),
                lang,
                measured=got,
                baseline=chance,
                margin=need,
                control=c("uniform"),
                values={"score": got, "score_by_seed": r.alignment_by_seed[kind], "chance": chance, "seeds": seeds},
                hint=hint,
            )
        )
    return claims

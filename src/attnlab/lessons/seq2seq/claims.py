"""The claims of `attnlab explain seq2seq`: comparisons that can fail (attnlab.lessons.common.claims), made from a
Seq2SeqResult's numbers alone.

The bottleneck is an effect size at the longest trained length: each attention model's exact-match accuracy
minus the one without attention, over the seeds, against a margin of GAP (20 points) or two standard errors,
whichever is larger (gap_stats). The same margin judges how much further the model without attention falls from
the shortest length to that one, beyond the share of its accuracy the same LSTM with Bahdanau's attention keeps
over those lengths (exact match gets harder with length for any model: the fall is the bottleneck's only beyond
that). Chapter 01's "an encoder-decoder shines where input and output differ" is the same effect size on the exact match
averaged over the trained lengths (one length's would rest on a handful of strings where both models are still
learning), the encoder-decoder against a decoder-only GPT of equal parameters trained alike: shown, a tie, or
contradicted (the decoder-only leading) are all findings. Two are facts of the graph, true untrained
too: the no-attention decoder reads only the encoder's final state, and Bahdanau's weights are the formula done by
hand (to IDENTITY_TOL). Each model's alignment is scored at every trained length against a uniform map's there
(1/n), and its weakest length must clear it by half the way to a perfect score plus two standard errors (seeds
that straddle the bar are no verdict): an average over lengths would hide a length where the map has not aligned.
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
    return _gap(a, b, r.params["n_test"])


def trained_gap_stats(r, better: str, worse: str) -> dict:
    """gap_stats on each seed's exact match averaged over the trained lengths (every test string of them counted)."""
    at = [r.lengths.index(n) for n in r.train_lengths]
    a = [sum(run[i] for i in at) / len(at) for run in r.accuracy_by_seed[better]]
    b = [sum(run[i] for i in at) / len(at) for run in r.accuracy_by_seed[worse]]
    return _gap(a, b, r.params["n_test"] * len(at))


def _gap(a: list[float], b: list[float], per_seed: int) -> dict:
    k, n = len(a), len(a) * per_seed
    pa, pb = sum(a) / k, sum(b) / k
    se = math.sqrt(pa * (1 - pa) / n + pb * (1 - pb) / n)
    gaps = [x - y for x, y in zip(a, b)]
    if k > 1:
        mean = sum(gaps) / k
        se = max(se, math.sqrt(sum((d - mean) ** 2 for d in gaps) / (k - 1) / k))
    return {"better": pa, "worse": pb, "gap": pa - pb, "se": se, "margin": max(GAP, 2 * se), "by_seed": gaps}


def fall_stats(r, worse: str, better: str, at_short: int, at_long: int) -> dict:
    """`worse`'s accuracy at length index at_long against what it would keep had it fallen from at_short only in the
    proportion `better` falls (its accuracy there times better's long / short; a better model right on no short
    string keeps it all), over the seeds of r, with the margin: GAP or two standard errors, whichever is larger
    (binomial over every test string, or with two seeds or more the seeds' spread)."""
    long, expected, short, keeps = [], [], [], []
    for w, b in zip(r.accuracy_by_seed[worse], r.accuracy_by_seed[better]):
        keep = b[at_long] / b[at_short] if b[at_short] > 0 else 1.0
        short.append(w[at_short])
        long.append(w[at_long])
        keeps.append(keep)
        expected.append(w[at_short] * keep)
    k, n = len(long), len(long) * r.params["n_test"]
    pl, pe = sum(long) / k, sum(expected) / k
    se = math.sqrt(pl * (1 - pl) / n + pe * (1 - pe) / n)
    gaps = [e - x for e, x in zip(expected, long)]
    if k > 1:
        mean = sum(gaps) / k
        se = max(se, math.sqrt(sum((d - mean) ** 2 for d in gaps) / (k - 1) / k))
    return {
        "short": sum(short) / k,
        "long": pl,
        "expected": pe,
        "keeps": sum(keeps) / k,
        "se": se,
        "margin": max(GAP, 2 * se),
        "by_seed": gaps,
    }


def weakest_length(r, kind: str) -> dict:
    """The trained length where `kind`'s map, averaged over the seeds, is furthest from aligned, by its share of the
    way from a uniform map's score (1/n) to a perfect one; with the margin there: halfway, plus two standard errors
    of the score (the larger of the binomial one over the test strings and, with two seeds or more, the seeds')."""
    by_seed = r.alignment_by_length[kind]  # [seed][length]
    means = [sum(col) / len(col) for col in zip(*by_seed)]
    i = min(range(len(means)), key=lambda j: (means[j] - 1 / r.train_lengths[j]) / (1 - 1 / r.train_lengths[j]))
    n, got, k = r.train_lengths[i], means[i], len(by_seed)
    se = math.sqrt(got * (1 - got) / (k * r.params["n_test"]))
    if k > 1:
        se = max(se, math.sqrt(sum((run[i] - got) ** 2 for run in by_seed) / (k - 1) / k))
    return {"n": n, "score": got, "chance": 1 / n, "se": se, "margin": (1 - 1 / n) / 2 + 2 * se, "means": means}


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
    s = fall_stats(r, "no_attention", "bahdanau", 0, at)
    n0 = r.lengths[0]
    claims.append(
        lead(
            "falls",
            t(
                "explain.seq2seq.claim.falls",
                lang,
                n0=n0,
                a0=s["short"],
                L=L,
                aL=s["long"],
                keep=s["keeps"],
                expected=s["expected"],
                over=over,
                margin=s["margin"] * 100,
            ),
            lang,
            measured=s["long"],
            baseline=s["expected"],
            margin=s["margin"],
            lower=True,
            control=c("with_attention", n0=n0, L=L),
            values={
                "short": n0,
                "length": L,
                "accuracy_short": s["short"],
                "accuracy_long": s["long"],
                "attention_keeps": s["keeps"],
                "expected_long": s["expected"],
                "gap_by_seed": s["by_seed"],
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
    for cid, kind in (("alignment", "bahdanau"), ("alignment_cross", "transformer")):
        w = weakest_length(r, kind)
        claims.append(
            lead(
                cid,
                t(
                    f"explain.seq2seq.claim.{cid}",
                    lang,
                    n=w["n"],
                    score=w["score"],
                    chance=w["chance"],
                    over=over,
                    margin=w["margin"] * 100,
                    lo=r.train_lengths[0],
                    hi=L,
                    mean=r.alignment_score[kind],
                ),
                lang,
                measured=w["score"],
                baseline=w["chance"],
                margin=w["margin"],
                control=c("uniform_at", n=w["n"]),
                values={
                    "length": w["n"],
                    "score": w["score"],
                    "chance": w["chance"],
                    "standard_error": w["se"],
                    "lengths": list(r.train_lengths),
                    "by_length": w["means"],
                    "mean": r.alignment_score[kind],
                    "score_by_seed": r.alignment_by_seed[kind],
                    "seeds": seeds,
                },
                hint=hint,
            )
        )
    s = trained_gap_stats(r, "transformer", "decoder_only")
    claims.append(
        lead(
            "encoder_decoder_leads",
            t(
                "explain.seq2seq.claim.encoder_decoder_leads",
                lang,
                lo=r.train_lengths[0],
                L=L,
                ed=s["better"],
                do=s["worse"],
                over=over,
                margin=s["margin"] * 100,
            ),
            lang,
            measured=s["better"],
            baseline=s["worse"],
            margin=s["margin"],
            control=c("decoder_only", lo=r.train_lengths[0], L=L),
            values={
                "lengths": list(r.train_lengths),
                "encoder_decoder": s["better"],
                "decoder_only": s["worse"],
                "gap": s["gap"],
                "gap_by_seed": s["by_seed"],
                "standard_error": s["se"],
                "seeds": seeds,
            },
            hint=hint,
        )
    )
    return claims

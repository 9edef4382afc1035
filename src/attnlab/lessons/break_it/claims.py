"""The claims of `attnlab explain break`: each a comparison over the seeds that can fail (attnlab.lessons.common.claims).

Every experiment claims the same start (the pair shares its initial weights and batches: an identity) and that the
ablation does what it names (break_checks: the ablated model meets a hand-written formula, the intact one misses
it). Then what the runs measured, as a lead of the ablated model over the intact one of the same seed: the mean of
the paired differences must clear a noise-aware margin, the larger of FLOOR (a loss difference under 0.01 nats is a
tie whatever the seeds say: two models that both memorized the poem at loss 0.001 show nothing) and the one-sided
95% t quantile times the standard error of the paired differences (3 seeds: 2.92 standard errors). A tie within
that margin is "not shown", never a verdict.

no-causal-mask trains to a lower loss and evaluates causally to a higher one; no-residual and ffn-only end worse
(ffn-only can do no better than the text's conditional entropy given the current character and its place, a
closed-form bound); the others still learn: their causal loss ends below what the text's character frequencies alone
give (frequency_entropy: all a model trained on the characters shuffled can learn, the claim's strongest null), by
at least half as far as the intact model's does, and by more than the seeds' noise.
Where the final loss shows nothing, the ablation's own consequence: no-scale (one head of d_k 64) saturates the
softmax, no-layernorm learns slower (its causal loss averaged over the run is higher). ffn-first is the usual
alternation shifted by half a block (an identity on the model), and its cost is measured on held-out text.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections import Counter

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead, within

TINY = 1e-9  # a formula met in float64
DIFFERS = 1e-6  # the intact model must miss the formula by more than this (else the check proves nothing)
LEARNS = 0.5  # "still learns": its causal loss falls at least this share of the way the intact model's falls
FLOOR = 0.01  # nats: a difference in loss smaller than this is a tie, however steady over the seeds
PEAK_FLOOR = 0.05  # "saturates": the largest attention weight must lead by 5 points at least
BOUND_TOL = 1e-6  # nats: float32 rounding of a loss measured against the closed-form bound
# One-sided 95% quantiles of Student's t with k degrees of freedom (k = seeds - 1).
T95 = {1: 6.314, 2: 2.920, 3: 2.353, 4: 2.132, 5: 2.015, 6: 1.943, 7: 1.895, 8: 1.860, 9: 1.833}


def noise_margin(diffs: list[float], floor: float = FLOOR) -> float:
    """What a mean paired difference must clear: the larger of `floor` and t(95%, n-1) standard errors."""
    n = len(diffs)
    if n < 2:
        raise ValueError("a margin over seeds needs at least 2 seeds")
    se = statistics.stdev(diffs) / math.sqrt(n)
    return max(floor, T95.get(n - 1, 1.645) * se)


def bigram_entropy(data) -> float:
    """H(next | current token, its place in the window) over the windows the causal loss is measured on: a
    model whose positions never read one another (ffn-only) sees only these two, so no such model can have a
    lower cross-entropy there."""
    from attnlab.lessons.break_it.runs import BASE
    from attnlab.train.data import eval_windows

    x, y = eval_windows(data.val, BASE["context_length"])  # (W, T), (W, T)
    place = [(int(a), i) for row in x for i, a in enumerate(row)]
    pairs = Counter(zip(place, y.flatten().tolist()))
    current = Counter(place)
    n = sum(pairs.values())
    return -sum(c / n * math.log(c / current[a]) for (a, _), c in pairs.items())


def frequency_entropy(data, T: int) -> float:
    """The cross-entropy of the next character by the training text's character frequencies alone, over the windows
    of length T the causal loss is measured on: what a model that learned the frequencies and nothing of the order
    scores. Shuffling keeps the counts, so a model trained on the characters shuffled can do no better in
    expectation. (A character the training text lacks counts half an occurrence.)"""
    from attnlab.train.data import eval_windows

    _, y = eval_windows(data.val, T)  # (W, T)
    counts = Counter(data.train.tolist())
    targets = y.flatten().tolist()
    total = len(data.train) + 0.5 * len({x for x in targets if x not in counts})
    return -mean([math.log(max(counts.get(x, 0), 0.5) / total) for x in targets])


def mean(xs) -> float:
    return sum(xs) / len(xs)


def _c(lang: str, name: str, **fields) -> str:
    return t(f"explain.break_it.control.{name}", lang, **fields)


def _s(name: str, lang: str, **fields) -> str:
    return t(f"explain.break_it.claim.{name}", lang, **fields)


def compare(r, get, *, floor: float = FLOOR) -> dict:
    """The paired comparison of one number per run, ablated against intact over the seeds: the means, the mean
    difference, the margin it must clear and how many seeds lean each way."""
    a = {x.seed: get(x) for x in r.runs if x.model == "ablated"}
    i = {x.seed: get(x) for x in r.runs if x.model == "intact"}
    d = [a[s] - i[s] for s in r.seeds]
    return {
        "a": mean(list(a.values())),
        "i": mean(list(i.values())),
        "d": mean(d),
        "margin": noise_margin(d, floor),
        "up": sum(x > 0 for x in d),
        "n": len(d),
        "diffs": d,
    }


def _lead(
    id_: str, key: str, r, cmp: dict, lang: str, control: str, lower: bool = False, hint: str | None = None, **fields
) -> Claim:
    values = {"ablated": cmp["a"], "intact": cmp["i"], "difference": cmp["d"], "per_seed": cmp["diffs"]}
    text = _s(
        key,
        lang,
        a=cmp["a"],
        i=cmp["i"],
        d=abs(cmp["d"]),
        m=cmp["margin"],
        up=cmp["up"],
        down=cmp["n"] - cmp["up"],
        n=cmp["n"],
        **fields,
    )
    return lead(
        id_,
        text,
        lang,
        measured=cmp["a"],
        baseline=cmp["i"],
        margin=cmp["margin"],
        lower=lower,
        control=control,
        values=values,
        hint=hint,
    )


def claims(r, lang: str) -> list[Claim]:
    from attnlab.lessons.break_it import runs as runs_

    a = r.ablation
    n = len(r.seeds)
    c = functools.partial(_c, lang)
    steps, shuffle = r.params["train_steps"], r.params["shuffle"]
    same = max(runs_.paired(a, r.corpus, steps, s, shuffle=shuffle).same_start for s in r.seeds)
    ck = r.check
    # a check that the intact model passes too proves nothing: counted as a miss (values keep the real error)
    error = ck["error"] if ck["holds"] or ck["error"] >= TINY else 1.0
    out = [
        within(
            "same_start",
            _s("same_start", lang, n=n, diff=same),
            lang,
            measured=same,
            expected=0.0,
            tol=0.0,
            control=c("same_start"),
            values={"largest_difference": same},
        ),
        within(
            "does_what_it_says",
            _s(f"check.{ck['kind']}", lang, **ck),
            lang,
            measured=error,
            expected=0.0,
            tol=TINY,
            control=c("formula"),
            values={"error": ck["error"], "intact": ck["intact"]},
        ),
    ]
    final_causal = compare(r, lambda x: x.final_causal)
    # trained on the characters shuffled (the null of "still learns"), the models never saw the text their causal
    # loss is measured on: what the part costs there is not asked, as on a text remembered whole
    real = not r.params["shuffle"]
    if a == "no-causal-mask":
        out.append(_lead("leak", "leak", r, compare(r, lambda x: x.final_train), lang, c("intact_train"), lower=True))
        if real:
            out.append(_lead("fails_causal", "fails_causal", r, final_causal, lang, c("intact_causal")))
    elif a in ("no-residual", "ffn-only"):
        if real:
            out.append(_lead("worse", "worse", r, final_causal, lang, c("intact_causal")))
        if a == "ffn-only":
            bound = bigram_entropy(runs_.corpus_data(r.corpus))
            low = min(x.final_causal for x in r.runs if x.model == "ablated")
            below = max(0.0, bound - low)  # how far its best run went under the bound: 0 if none did
            out.append(
                within(
                    "bigram_bound",
                    _s("bigram_bound", lang, low=low, bound=bound, below=below),
                    lang,
                    measured=below,
                    expected=0.0,
                    tol=BOUND_TOL,
                    control=c("bigram_bound"),
                    values={"lowest": low, "bound": bound},
                )
            )
    else:
        out.append(_still_learns(r, lang, c("frequencies")))
        m = measured(r)
        if a == "no-scale":  # the consequence at a large d_k: a sharper softmax from the very first step
            # per seed, the smaller of the two leads (at the start, at the end): both must be there
            ablated = {x.seed: x for x in r.runs if x.model == "ablated"}
            intact = {x.seed: x for x in r.runs if x.model == "intact"}
            d = [
                min(
                    ablated[s].attn_peak[0] - intact[s].attn_peak[0], ablated[s].attn_peak[-1] - intact[s].attn_peak[-1]
                )
                for s in r.seeds
            ]
            margin = noise_margin(d, PEAK_FLOOR)
            out.append(
                lead(
                    "saturates",
                    _s("saturates", lang, lead=mean(d), margin=margin, **m),
                    lang,
                    measured=mean(d),
                    baseline=0.0,
                    margin=margin,
                    control=c("scaled_peak"),
                    values={"smaller_lead": mean(d), "per_seed": d, **m},
                )
            )
        if (
            a == "attention-only" and real
        ):  # the course: the FFN is indispensable (README, break it: not at these sizes)
            hint = t("explain.break_it.hint.attention-only", lang)
            out.append(_lead("worse", "worse", r, final_causal, lang, c("intact_causal"), hint=hint))
        if a == "no-layernorm" and real:  # the consequence: slower, its whole curve higher
            out.append(_lead("slower", "slower", r, compare(r, lambda x: mean(x.causal_loss)), lang, c("intact_area")))
        if a == "ffn-first":
            out.append(_shifted(r, lang, c("regrouped")))
            if r.causal_on == "held_out" and real:  # on a text it trained on, a model can remember: not asked there
                out.append(
                    _lead(
                        "costs",
                        "costs",
                        r,
                        final_causal,
                        lang,
                        c("intact_held_out"),
                        hint=t("explain.break_it.hint.costs", lang),
                    )
                )
    return out


def _still_learns(r, lang: str, control: str) -> Claim:
    """How far below the frequencies (frequency_entropy) its causal loss ends, 0 if it does not: at least LEARNS
    of the intact model's lead over them, and more than the seeds' noise. Not learning is no effect, never the
    opposite one: a model trained on the characters shuffled, which overfits an order the real text does not
    have, ends above them and is "not shown", as is one that learnt nothing."""
    from attnlab.lessons.break_it.runs import corpus_data

    ablated = [x for x in r.runs if x.model == "ablated"]
    intact = [x for x in r.runs if x.model == "intact"]
    freq = frequency_entropy(corpus_data(r.corpus), r.setup["context_length"])
    a0, a1 = mean([x.causal_loss[0] for x in ablated]), mean([x.final_causal for x in ablated])
    i0, i1 = mean([x.causal_loss[0] for x in intact]), mean([x.final_causal for x in intact])
    gains = [freq - x.final_causal for x in ablated]  # per seed: how far below the frequencies it ends
    margin = max(LEARNS * (freq - i1), noise_margin(gains))
    text = _s("still_learns", lang, share=LEARNS, a0=a0, a=a1, i0=i0, i=i1, f=freq, m=margin, n=len(ablated))
    return lead(
        "still_learns",
        text,
        lang,
        measured=max(0.0, freq - a1),
        baseline=0.0,
        margin=margin,
        control=control,
        values={
            "ablated_start": a0,
            "ablated_end": a1,
            "intact_start": i0,
            "intact_end": i1,
            "frequencies": freq,
        },
    )


def _shifted(r, lang: str, control: str) -> Claim:
    from attnlab.lessons.break_it import checks
    from attnlab.lessons.break_it.runs import corpus_data

    s = checks.shifted(corpus_data(r.corpus))
    error = s["error"] if s["intact"] > DIFFERS else max(s["error"], 1.0)
    return within(
        "shifted", _s("shifted", lang, **s), lang, measured=error, expected=0.0, tol=TINY, control=control, values=s
    )


def measured(r) -> dict:
    """The numbers the ablation-specific sentences show, as means over the seeds: the causal loss averaged over
    the run (the area under its curve, per step measured) and the largest attention weight at the start and end."""
    out = {
        "uniform": mean([1 / t for t in range(2, r.setup["context_length"] + 1)]),
        "d_k": r.setup["d_model"] // r.setup["n_heads"],
        "n_layers": r.setup["n_layers"],
        "middle": r.setup["n_layers"] - 1,
    }
    for model, key in (("intact", "i"), ("ablated", "a")):
        rs = [x for x in r.runs if x.model == model]
        out[f"{key}_area"] = mean([mean(x.causal_loss) for x in rs])
        if all(x.attn_peak for x in rs):
            out[f"{key}_peak0"] = mean([x.attn_peak[0] for x in rs])
            out[f"{key}_peak1"] = mean([x.attn_peak[-1] for x in rs])
    return out

"""The claims of `attnlab explain break`: what was measured over the seeds, each with `holds`.

Every experiment claims the same start (the pair shares its initial weights and batches) and that the
ablation does what it names (break_checks). Then what the runs measured, per ablation, over every seed:
no-causal-mask trains to a lower loss and evaluates causally to a higher one; no-residual and ffn-only end
worse than the intact model (ffn-only can do no better than the text's bigram entropy, a closed-form bound);
the others still learn (their causal loss falls at least half as far as the intact model's, seed by seed).
Where the final loss shows nothing, the ablation's own consequence: no-scale (one head of d_k 64) saturates the
softmax, no-layernorm learns slower (its causal loss averaged over the run is higher), ffn-first no slower.
"""

from __future__ import annotations

import math
from collections import Counter

from attnlab.i18n import t
from attnlab.lessons.common.params import Claim

TINY = 1e-9  # a formula met in float64
LEARNS = 0.5  # "still learns": its causal loss falls at least this share of the way the intact model's falls


def bigram_entropy(data) -> float:
    """H(next | current token, its place in the window) over the windows the causal loss is measured on: a
    model whose positions never read one another (ffn-only) sees only these two, so no such model can have a
    lower cross-entropy there."""
    from attnlab.lessons.break_it.runs import BASE, windows

    x, y = windows(data.val, BASE["context_length"])  # (W, T), (W, T)
    place = [(int(a), i) for row in x for i, a in enumerate(row)]
    pairs = Counter(zip(place, y.flatten().tolist()))
    current = Counter(place)
    n = sum(pairs.values())
    return -sum(c / n * math.log(c / current[a]) for (a, _), c in pairs.items())


def claims(r, lang: str) -> list[Claim]:
    from attnlab.lessons.break_it import runs as runs_

    a = r.ablation
    intact = {x.seed: x for x in r.runs if x.model == "intact"}
    ablated = {x.seed: x for x in r.runs if x.model == "ablated"}
    n = len(r.seeds)
    same = max(runs_.paired(a, r.corpus, r.params["train_steps"], s).same_start for s in r.seeds)
    c = r.check
    out = [
        Claim("same_start", t("explain.break_it.claim.same_start", lang, n=n, diff=same), same, 0.0, same == 0.0),
        Claim("does_what_it_says", t(f"explain.break_it.claim.check.{c['kind']}", lang, **c), c["error"], TINY,
              bool(c["holds"])),
    ]

    def every(test) -> int:
        return sum(bool(test(s)) for s in r.seeds)

    if a == "no-causal-mask":
        k1 = every(lambda s: ablated[s].final_train < intact[s].final_train)
        k2 = every(lambda s: ablated[s].final_causal > intact[s].final_causal)
        out += [
            Claim("leak", t("explain.break_it.claim.leak", lang, k=k1, n=n, a=r.table[1].train_mean, i=r.table[0].train_mean),
                  k1, n, k1 == n),
            Claim("fails_causal", t("explain.break_it.claim.fails_causal", lang, k=k2, n=n, a=r.table[1].causal_mean,
                                    i=r.table[0].causal_mean), k2, n, k2 == n),
        ]
    elif a in ("no-residual", "ffn-only"):
        k = every(lambda s: ablated[s].final_causal > intact[s].final_causal)
        out.append(Claim("worse", t("explain.break_it.claim.worse", lang, k=k, n=n, a=r.table[1].causal_mean,
                                    i=r.table[0].causal_mean), k, n, k == n))
        if a == "ffn-only":
            from attnlab.lessons.break_it.runs import corpus_data

            bound = bigram_entropy(corpus_data(r.corpus))
            low = min(x.final_causal for x in ablated.values())
            out.append(Claim("bigram_bound", t("explain.break_it.claim.bigram_bound", lang, low=low, bound=bound),
                             low, bound, low >= bound - 1e-6))
    else:
        def drop(x) -> float:  # how far a run's causal loss fell from its first measurement
            return x.causal_loss[0] - x.final_causal

        k = every(lambda s: drop(ablated[s]) >= LEARNS * drop(intact[s]) > 0)
        out.append(Claim("still_learns", t("explain.break_it.claim.still_learns", lang, k=k, n=n, share=LEARNS,
                                           a=r.table[1].causal_mean, i=r.table[0].causal_mean,
                                           a0=sum(x.causal_loss[0] for x in ablated.values()) / n), k, n, k == n))
        m = measured(r)
        if a == "no-scale":  # the consequence at a large d_k: a sharper softmax from the very first step
            k = every(lambda s: ablated[s].attn_peak[0] > intact[s].attn_peak[0]
                      and ablated[s].attn_peak[-1] > intact[s].attn_peak[-1])
            out.append(Claim("saturates", t("explain.break_it.claim.saturates", lang, k=k, n=n, **m), k, n, k == n))
        if a == "no-layernorm":  # the consequence: slower, its whole curve higher
            k = every(lambda s: mean(ablated[s].causal_loss) > mean(intact[s].causal_loss))
            out.append(Claim("slower", t("explain.break_it.claim.slower", lang, k=k, n=n, **m), k, n, k == n))
        if a == "ffn-first":  # measured on the poem at 40-120 steps, seeds 0-4: the other order is no slower
            k = every(lambda s: mean(ablated[s].causal_loss) <= mean(intact[s].causal_loss))
            out.append(Claim("no_slower", t("explain.break_it.claim.no_slower", lang, k=k, n=n, **m), k, n, k == n))
    return out


def mean(xs) -> float:
    return sum(xs) / len(xs)


def measured(r) -> dict:
    """The numbers the ablation-specific sentences show, as means over the seeds: the causal loss averaged over
    the run (the area under its curve, per step measured) and the largest attention weight at the start and end."""
    out = {"uniform": mean([1 / t for t in range(2, r.setup["context_length"] + 1)]),
           "d_k": r.setup["d_model"] // r.setup["n_heads"]}
    for model, key in (("intact", "i"), ("ablated", "a")):
        rs = [x for x in r.runs if x.model == model]
        out[f"{key}_area"] = mean([mean(x.causal_loss) for x in rs])
        if all(x.attn_peak for x in rs):
            out[f"{key}_peak0"] = mean([x.attn_peak[0] for x in rs])
            out[f"{key}_peak1"] = mean([x.attn_peak[-1] for x in rs])
    return out

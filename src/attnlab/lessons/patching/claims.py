"""The claims of `attnlab explain patching`: each a comparison with its strongest null that can fail
(attnlab.lessons.common.claims, lessons/common/nulls.py).

Three that the trained model's answer is carried by identifiable parts (the changed character, a few heads, one
head's clean output), each counted over seeds (lessons/patching/seeds.py): a seed counts when the model of the text
beats its twin trained on the same characters shuffled, against a coin per seed. Three that a reading of the weights
predicts a measured effect: Spearman's ρ against whole windows paired with other windows (the windows are the
independent units, not the pairs inside one). And the course's "weights ≠ importance": the heads' weight-to-effect ρ
against the effects measured again on other replacements, what a reading that is importance would reach.
"""

from __future__ import annotations

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, beats_chance, chance_count, lead
from attnlab.lessons.patching.seeds import wins

COIN = 0.5  # a seed's model of the text against its shuffled twin, were the order to teach nothing
REMEASURED_MARGIN = 0.5  # "weights ≠ importance": ρ at least this far below importance measured again


def claims_of(rows: list, corr: list, remeasured: float | None, lang: str) -> list[Claim]:
    """The seven claims, from the seed count (seeds.SeedRow, the lesson's seed first), the correlations
    (lesson.Correlation: head_weight, token_attention, token_rollout) and the heads' effects measured twice."""

    def c(name: str) -> str:
        return t(f"explain.patching.control.{name}", lang)

    k = "explain.patching.claim."
    first = rows[0]
    out = []
    for name, field, hint in (
        ("corruption_matters", "gap", None),
        ("few_heads", "top_lead", t("explain.patching.hint.needed", lang)),
        ("one_head_restores", "best_restored", None),
    ):
        won, n = wins(rows, field)
        here, twin = getattr(first, field), getattr(first, field + "_shuffled")
        span = {"n": n, "s0": rows[0].seed, "s1": rows[-1].seed, "need": chance_count(n, COIN)}
        out.append(
            beats_chance(
                name,
                t(k + name, lang, k=won, value=here, base=twin, **span),
                lang,
                k=won,
                n=n,
                p=COIN,
                control=c("coin"),
                values={
                    "text": [getattr(r, field) for r in rows],
                    "shuffled": [getattr(r, field + "_shuffled") for r in rows],
                    "seeds": [r.seed for r in rows],
                },
                hint=hint,
            )
        )
    by = {x.name: x for x in corr}
    for name in ("head_weight", "token_attention", "token_rollout"):
        x = by[name]
        undefined = x.rho is None or x.chance_q95 is None
        rho = 0.0 if undefined else x.rho
        mean, q95 = (0.0, 0.0) if undefined else (x.chance_mean, x.chance_q95)
        out.append(
            lead(
                f"{name}_tracks",
                t(k + f"{name}_tracks", lang, rho=rho, q95=q95, n=x.n),
                lang,
                measured=rho,
                baseline=mean,
                margin=max(q95 - mean, 1e-9),
                control=c("windows"),
                values={"rho": x.rho, "chance_q95": x.chance_q95, "n": x.n},
                hint=t("explain.patching.hint.undefined", lang) if undefined else None,
            )
        )
    head = by["head_weight"]
    undefined = head.rho is None or remeasured is None
    rho = 0.0 if undefined else head.rho
    ceiling = rho if undefined else remeasured  # nothing measured twice: a tie, never a verdict
    out.append(
        lead(
            "weights_not_importance",
            t(k + "weights_not_importance", lang, rho=rho, again=ceiling, margin=REMEASURED_MARGIN),
            lang,
            measured=rho,
            baseline=ceiling,
            margin=REMEASURED_MARGIN,
            lower=True,
            control=c("remeasured"),
            values={"rho": head.rho, "remeasured": remeasured},
            hint=t("explain.patching.hint.undefined", lang) if undefined else None,
        )
    )
    return out

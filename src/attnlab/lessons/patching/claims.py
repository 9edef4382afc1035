"""The claims of `attnlab explain patching`: each a lead over a control that can fail (attnlab.lessons.common.claims).

Three that the trained model's answer is carried by a few identifiable parts, each against the same model
untrained (its corruption gap, its top head's lead over the median head, its best head's restoration), and four on
the readings of the weights: each Spearman ρ against shuffled pairings, and the course's "weights ≠ importance"
against a perfect reading (ρ = 1). The readings and correlations come from lesson.py (its Reading and Correlation).
"""

from __future__ import annotations

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead

GAP_MARGIN = 1.0  # nats: the corruption must cost the trained model this much more than the untrained one
LEAD_MARGIN = 0.5  # nats the top head's mean-ablation loss must lead the median head's by, beyond the untrained lead
RESTORE_MARGIN = 1.0  # nats one head's clean output must give back beyond what the untrained model's best gives
PERFECT_MARGIN = 0.5  # "weights ≠ importance": ρ at least this far below a perfect reading (ρ = 1)


def claims_of(trained, untrained, corr: list, lang: str) -> list[Claim]:
    """The seven claims, from the trained and untrained models' readings (lesson.Reading) and the correlations
    (lesson.Correlation: head_weight, token_attention, token_rollout)."""

    def c(name: str) -> str:
        return t(f"explain.patching.control.{name}", lang)

    k = "explain.patching.claim."
    by = {x.name: x for x in corr}
    out = [
        lead(
            "corruption_matters",
            t(k + "corruption_matters", lang, gap=trained.gap, base=untrained.gap, margin=GAP_MARGIN),
            lang,
            measured=trained.gap,
            baseline=untrained.gap,
            margin=GAP_MARGIN,
            control=c("untrained"),
            values={"trained": trained.gap, "untrained": untrained.gap},
        ),
        lead(
            "few_heads",
            t(k + "few_heads", lang, lead=trained.top_lead, base=untrained.top_lead, margin=LEAD_MARGIN),
            lang,
            measured=trained.top_lead,
            baseline=untrained.top_lead,
            margin=LEAD_MARGIN,
            control=c("untrained"),
            values={"trained": trained.top_lead, "untrained": untrained.top_lead},
            hint=t("explain.patching.hint.needed", lang),
        ),
        lead(
            "one_head_restores",
            t(
                k + "one_head_restores",
                lang,
                nats=trained.best_restored,
                gap=trained.gap,
                base=untrained.best_restored,
                margin=RESTORE_MARGIN,
            ),
            lang,
            measured=trained.best_restored,
            baseline=untrained.best_restored,
            margin=RESTORE_MARGIN,
            control=c("untrained"),
            values={"trained": trained.best_restored, "untrained": untrained.best_restored},
        ),
    ]
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
                control=c("shuffled"),
                values={"rho": x.rho, "chance_q95": x.chance_q95, "n": x.n},
                hint=t("explain.patching.hint.undefined", lang) if undefined else None,
            )
        )
    head = by["head_weight"]
    rho = 1.0 if head.rho is None else head.rho  # no ρ: nothing shows the weights fall short
    out.append(
        lead(
            "weights_not_importance",
            t(k + "weights_not_importance", lang, rho=rho, margin=PERFECT_MARGIN),
            lang,
            measured=rho,
            baseline=1.0,
            margin=PERFECT_MARGIN,
            lower=True,
            control=c("perfect"),
            values={"rho": head.rho},
        )
    )
    return out

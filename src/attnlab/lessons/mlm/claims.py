"""The claims of `attnlab explain mlm` (attnlab.lessons.common.claims): which model comes out ahead, read off the
held-out characters, never assumed.

That the causal model cannot see its right side is an identity: changing every character after position i leaves
its output at i unchanged (difference 0). Each comparison of PAIRS is a paired lead over the same hidden characters:
lead_z puts the per-character differences in standard errors under "no difference" (for right-or-wrong, McNemar's),
once for accuracy and once for -ln p, and trained() in lesson.py records both; a model is ahead only when the two
agree (agreeing) and lead by LEADS; a tie within that is "not shown". The shortcut (the two left-only GPTs, the
same characters on their left, only the task differs) is a question of how training goes, which changes from seed
to seed (at 600 steps the fill-the-blank GPT is still at chance at some seeds and level at others) and with the
CPU's rounding: one seed's lead is luck, so it counts over the `seeds` seeds of the pair, as a count of the
decisive seeds (ahead or behind by LEADS) against a coin. On the couplets no left-only model can beat chance on a
上联 character: both stay within CHANCE_SDS binomial standard deviations of 1/40 (chance_bound).
"""

from __future__ import annotations

import math

import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, beats_chance, chance_count, lead, status_of, within
from attnlab.lessons.mlm.task import COUPLETS

LEADS = 2.0  # a model is "better" when it leads on accuracy and on -ln p by two standard errors each
CHANCE_SDS = 4  # "at chance": within four binomial standard deviations of 1/40
PAIRS = (
    ("accuracy", "bidirectional", "causal"),
    ("direction", "bidirectional", "causal_fill"),
    ("shortcut", "causal", "causal_fill"),
)  # claim, the model the course says is better, the one it is compared with


def lead_z(diff: torch.Tensor) -> float:
    """How far the per-character differences (n,) lead 0, in standard errors under "no difference": sum / sqrt(sum of
    squares) (for right-or-wrong differences this is McNemar's: (b - c) / sqrt(b + c)); 0 when they are all 0."""
    total, size = float(diff.sum()), math.sqrt(float((diff**2).sum()))
    return total / size if size > 0 else 0.0


def agreeing(z_accuracy: float, z_loss: float) -> float:
    """The lead both measures agree on: the smaller one when both lead, the larger when both trail, else 0, so a
    model counts as better only when accuracy and -ln p both say so."""
    if z_accuracy > 0 and z_loss > 0:
        return min(z_accuracy, z_loss)
    if z_accuracy < 0 and z_loss < 0:
        return max(z_accuracy, z_loss)
    return 0.0


def chance_bound(p: float, n: int) -> float:
    """Four standard deviations of a binomial share: a model at chance stays within it."""
    return CHANCE_SDS * math.sqrt(p * (1 - p) / max(n, 1))


VERDICT = {"shown": "ahead", "contradicted": "behind", "not_shown": "tie"}


def claims_of(r, lang: str) -> list[Claim]:
    """The claims of an MlmResult (lesson.py), in the order the page lists them."""
    acc, loss = r.accuracy, r.held_out_loss
    claims = [
        within(
            "causal_blind",
            t("explain.mlm.claim.blind", lang, causal=r.causal_right_change, enc=r.encoder_right_change),
            lang,
            measured=r.causal_right_change,
            expected=0.0,
            tol=0.0,
            control=t("explain.mlm.control.unchanged", lang),
            values={"causal": r.causal_right_change, "encoder": r.encoder_right_change},
        ),
    ]
    if r.n_masked:  # each comparison: accuracy and -ln p must both lead by LEADS standard errors (see lead_z, agreeing)
        for cid, a, b in PAIRS:
            z = r.paired[f"{a}-{b}"]
            measured = agreeing(z["z_accuracy"], z["z_loss"])
            said = VERDICT[status_of("above", measured, 0.0, LEADS)]
            text = t(
                f"explain.mlm.claim.{cid}.{said}",
                lang,
                n=r.n_masked,
                poems=r.n_test_poems,
                aa=acc[a],
                ab=acc[b],
                na=r.correct[a],
                nb=r.correct[b],
                la=loss[a],
                lb=loss[b],
                za=z["z_accuracy"],
                zl=z["z_loss"],
                base=acc["baseline"],
                unseen=r.n_unseen,
                margin=LEADS,
                seed=r.params["seed"],
            )
            if cid == "shortcut":
                claims.append(shortcut(r, text, lang))
                continue
            claims.append(
                lead(
                    cid,
                    text,
                    lang,
                    measured=measured,
                    baseline=0.0,
                    margin=LEADS,
                    control=t(f"explain.mlm.control.{b}", lang),
                    values={
                        "accuracy": acc[a],
                        "accuracy_control": acc[b],
                        "loss": loss[a],
                        "loss_control": loss[b],
                        **z,
                        "baseline_accuracy": acc["baseline"],
                    },
                    hint=t(f"explain.mlm.hint.{cid}", lang) if r.corpus == COUPLETS else None,
                )
            )
        claims.insert(0, claims.pop(1))  # "accuracy" first, as the page has always listed it
    if r.chance is not None and r.n_by_verse["first"]:  # couplets: no left-only model can beat chance on a 上联
        n = r.n_by_verse["first"]
        first = max((r.by_verse[k]["first"] for k in ("causal", "causal_fill")), key=lambda x: abs(x - r.chance))
        tol = chance_bound(r.chance, n)
        claims.append(
            within(
                "first_verse_chance",
                t(
                    "explain.mlm.claim.chance",
                    lang,
                    acc=r.by_verse["causal"]["first"],
                    fill=r.by_verse["causal_fill"]["first"],
                    n=n,
                    chance=r.chance,
                    tol=tol,
                    bi=r.by_verse["bidirectional"]["first"],
                ),
                lang,
                measured=first,
                expected=r.chance,
                tol=tol,
                control=t("explain.mlm.control.chance", lang),
                values={
                    "causal": r.by_verse["causal"]["first"],
                    "causal_fill": r.by_verse["causal_fill"]["first"],
                    "bidirectional": r.by_verse["bidirectional"]["first"],
                    "n": n,
                },
            )
        )
    return claims


def shortcut(r, text: str, lang: str) -> Claim:
    """The next-character GPT against the fill-the-blank one over the seeds of the pair: of the decisive seeds
    (ahead or behind by LEADS, accuracy and -ln p agreeing), how many it is ahead at, against a coin (1/2)."""
    leads = [agreeing(s["z_accuracy"], s["z_loss"]) for s in r.shortcut_seeds]
    ahead, behind = sum(x >= LEADS for x in leads), sum(x <= -LEADS for x in leads)

    count = t(
        "explain.mlm.claim.shortcut.count",
        lang,
        seeds=len(leads),
        ahead=ahead,
        behind=behind,
        ties=len(leads) - ahead - behind,
        need=chance_count(ahead + behind, 0.5),
        n=ahead + behind,
    )
    return beats_chance(
        "shortcut",
        text + (" " if lang == "en" else "") + count,
        lang,
        k=ahead,
        n=ahead + behind,
        p=0.5,
        control=t("explain.mlm.control.coin", lang),
        values={"seeds": [s["seed"] for s in r.shortcut_seeds], "leads": leads, "behind": behind},
        hint=t("explain.mlm.hint.shortcut", lang) if r.corpus == COUPLETS else None,
    )


__all__ = ["claims_of", "PAIRS", "LEADS", "CHANCE_SDS", "lead_z", "agreeing", "chance_bound"]

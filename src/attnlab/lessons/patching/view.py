"""The terminal view of `attnlab explain patching`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import g, table


def grid(title: str, m, rows: list[str], cols: list[str]):
    return table(title, [""] + cols, [[name, *row] for name, row in zip(rows, m)])


def show(console, r, lang, t) -> None:
    k = "explain.patching."
    console.print(r.note, highlight=False)
    console.print(f"{r.prompt} → {r.answer} · {r.corrupt} · {t(k + 'key_is', lang)} {r.key}", highlight=False)
    console.print(
        table(
            t(k + "h.prediction", lang),
            [t(k + "col." + c, lang) for c in ("model", "lp_clean", "lp_corrupt", "gap", "top_lead", "best_restored")],
            [
                [t(k + "row." + name, lang), x.lp_clean, x.lp_corrupt, x.gap, x.top_lead, x.best_restored]
                for name, x in (("trained", r.trained), ("untrained", r.untrained))
            ],
        )
    )
    cols = ("seed", "gap", "gap_shuffled", "top_lead", "top_lead_shuffled", "best_restored", "best_restored_shuffled")
    console.print(
        table(
            t(k + "h.seeds", lang),
            [t(k + "col." + c, lang) for c in cols],
            [[str(s.seed), *[g(getattr(s, c), 3) for c in cols[1:]]] for s in r.seeds],
        )
    )
    x = r.trained
    layers = [str(i + 1) for i in range(len(x.drop_zero))]
    heads = [f"H{h + 1}" for h in range(len(x.drop_zero[0]))]
    for how in ("zero", "mean", "resample"):
        console.print(grid(t(k + "m." + how, lang), getattr(x, "drop_" + how), layers, heads))
    if x.restore_resid is None:
        console.print(t(k + "no_gap", lang))
    else:
        console.print(grid(t(k + "m.resid", lang), x.restore_resid, r.resid_rows, r.positions))
        console.print(grid(t(k + "m.heads", lang), x.restore_heads, layers, heads))
    console.print(
        table(
            t(k + "h.weights", lang),
            [
                t(k + "col." + c, lang)
                for c in (
                    "layer",
                    "head",
                    "weight_key",
                    "drop_zero",
                    "drop_mean",
                    "drop_resample",
                    "restored",
                    "rank_weight",
                    "rank_effect",
                )
            ],
            [
                [
                    str(h.layer),
                    h.head,
                    *[g(v, 3) for v in (h.weight_key, h.drop_zero, h.drop_mean, h.drop_resample, h.restored)],
                    h.rank_weight,
                    h.rank_effect,
                ]
                for h in r.heads
            ],
        )
    )
    console.print(
        table(
            t(k + "h.tokens", lang),
            [t(k + "col." + c, lang) for c in ("position", "char", "attention", "rollout", "importance")],
            [[str(p.position), p.char, p.attention, p.rollout, g(p.importance)] for p in r.tokens],
        )
    )
    console.print(t(k + "course", lang), highlight=False)
    console.print(
        table(
            t(k + "h.corr", lang),
            [t(k + "col." + c, lang) for c in ("reading", "n", "rho", "chance_mean", "chance_q95")],
            [[c.label, c.n, g(c.rho), g(c.chance_mean), g(c.chance_q95)] for c in r.correlations],
        )
    )

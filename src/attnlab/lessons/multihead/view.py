"""The terminal view of `attnlab explain multihead`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table


def show(console, r, lang, t) -> None:
    rows = [
        [f"{v.n_heads} × d_k={v.d_k}", v.params, v.flops, v.flops_analytic, v.weight_entries]
        for v in (r.one_head, r.many_heads)
    ]
    console.print(
        table(
            t("explain.multihead.table", lang, n=r.params["n"]),
            ["", t("explain.ui.params", lang), "FLOPs (counter)", "8nd² + 4n²d", t("explain.ui.weight_entries", lang)],
            rows,
        )
    )
    rows = [
        [f"{s} → {y}"] + [h.weights[i][j] for h in r.hand_built_heads for j in range(3)]
        for i, (s, y) in enumerate(zip(r.inputs, r.targets))
    ]
    console.print(
        table(
            t("explain.multihead.hand_built", lang),
            ["x₀ x₁ x₂ → y"] + [f"h{h.head}·k{j}" for h in r.hand_built_heads for j in range(3)],
            rows,
        )
    )
    if r.runs:
        rows = [
            [run.n_heads, run.d_k, f"{run.solved}/{len(run.accuracies)}", run.best, ", ".join(map(str, run.correct))]
            for run in r.runs
        ]
        console.print(
            table(
                f"{t('explain.multihead.runs', lang)} ({t('explain.multihead.seeds', lang)} {r.seeds[0]}–{r.seeds[-1]})",
                [
                    t("explain.ui.heads", lang),
                    "d_k",
                    t("explain.multihead.solved", lang),
                    t("explain.multihead.best", lang),
                    t("explain.multihead.accuracies", lang),
                ],
                rows,
            )
        )

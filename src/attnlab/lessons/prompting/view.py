"""The terminal view of `attnlab explain prompting`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table

COLUMNS = ("two_layer", "deranged", "one_layer", "ablated", "ceiling")


def show(console, r, lang, t) -> None:
    k = "explain.prompting."
    console.print(r.note, highlight=False)
    x = r.example
    console.print(
        ", ".join(f"{a}→{b}" for a, b in x.pairs) + f", {x.query}→?  "
        f"{t(k + 'right', lang)} {x.answer} · {t(k + 'model.two_layer', lang)} {x.two_layer} · "
        f"{t(k + 'model.one_layer', lang)} {x.one_layer} · {t(k + 'model.deranged', lang)} {x.deranged}",
        highlight=False,
    )
    console.print(
        ", ".join(f"{a}→{b}" for a, b in x.deranged_pairs) + f", {x.query}→?  "
        f"{t(k + 'model.deranged', lang)} {x.deranged}",
        highlight=False,
    )
    console.print(
        table(
            t(k + "table", lang),
            [t(k + "col.shots", lang)] + [t(k + "model." + c, lang) for c in COLUMNS],
            [[str(s)] + [r.accuracy[c][i] for c in COLUMNS] for i, s in enumerate(r.shots)],
        )
    )
    console.print(
        f"{t(k + 'ablated_head', lang)} {', '.join(f'H{h}' for h in r.heads)} · {t(k + 'heads_table', lang)} "
        + " ".join(f"H{h + 1} {a:.3f}" for h, a in enumerate(r.label_attention))
        + f" · {t(k + 'alone', lang)} "
        + " ".join(f"H{h + 1} {a:.3f}" for h, a in enumerate(r.alone)),
        highlight=False,
    )

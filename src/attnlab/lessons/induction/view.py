"""The terminal view of `attnlab explain induction`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import g, table


def show(console, r, lang, t) -> None:
    k = "explain.induction."
    console.print(r.note, highlight=False)
    console.print(
        table(
            t(k + "pm_table", lang),
            [t(k + "col.step", lang)] + r.pm_cols,
            [[str(s)] + row for s, row in zip(r.steps, r.pm_rows)],
        )
    )
    console.print(
        table(
            t(k + "icl_table", lang),
            [t(k + "col.step", lang)] + r.icl_cols,
            [[str(s)] + row for s, row in zip(r.steps, r.icl_rows)],
        )
    )
    none = t(k + "none", lang)
    two, one = r.phase_step["two_layer"], r.phase_step["one_layer"]
    console.print(
        f"{t(k + 'phase', lang)} {t(k + 'phase_two', lang)} {none if two is None else two} · "
        f"{t(k + 'phase_one', lang)} {none if one is None else one} · chance {g(r.chance_prefix)}",
        highlight=False,
    )
    x = r.text
    console.print(f"{''.join(x.chars[: x.k])} ×2 · {t(k + 'text_icl', lang)} {g(x.icl_score)}", highlight=False)
    for m, key in ((x.previous_map, "map_previous"), (x.induction_map, "map_induction")):
        console.print(t(k + key, lang, layer=m.layer, head=m.head, score=m.score), highlight=False)

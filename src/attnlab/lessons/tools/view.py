"""The terminal view of `attnlab explain tools`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table

CONDITIONS = ("tool", "no_exec", "control")


def show(console, r, lang, t) -> None:
    k = "explain.tools."
    console.print(r.note, highlight=False)
    x = r.trace
    console.print(f"{x.question}  {t(k + 'right', lang)} {x.right}", highlight=False)
    for c in CONDITIONS:
        console.print(f"  {t(k + 'model.' + c, lang)}: {x.question}{getattr(x, c)}", highlight=False)
    console.print(
        table(
            t(k + "table", lang),
            [t(k + "col.digits", lang)]
            + [t(k + "model." + c, lang) for c in CONDITIONS]
            + [t(k + "col.well_formed", lang), t(k + "col.copied", lang)],
            [
                [str(d)] + [r.accuracy[c][i] for c in CONDITIONS] + [r.well_formed[i], r.copied[i]]
                for i, d in enumerate(r.lengths)
            ],
        )
    )

"""The terminal view of `attnlab explain long-range`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table

MODELS = ("transformer", "lstm", "gru")


def show(console, r, lang, t) -> None:
    k = "explain.long_range."
    console.print(r.note, highlight=False)
    console.print(f"{t(k + 'example', lang)}: {r.example}", highlight=False)
    console.print(t(k + "gru_equations", lang), highlight=False)
    console.print(
        table(
            t(k + "table", lang),
            [t(k + "col.d", lang)] + [f"{t(k + 'model.' + m, lang)} · {r.n_params[m]:,}" for m in MODELS],
            [[str(d)] + [r.accuracy[m][i] for m in MODELS] for i, d in enumerate(r.distances)],
        )
    )

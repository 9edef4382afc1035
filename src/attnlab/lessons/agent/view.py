"""The terminal view of `attnlab explain agent`: `show(console, r, lang, t)` prints the lesson's numbers, the
trace step by step first; the lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table

CONDITIONS = ("agent", "no_exec", "single_shot")


def show(console, r, lang, t) -> None:
    k = "explain.agent."
    console.print(r.note, highlight=False)
    x = r.trace
    right = x.right if x.right is not None else t(k + "unknown", lang)
    console.print(f"{x.question}  {t(k + 'right', lang)} {right}", highlight=False, markup=False)
    for n, s in enumerate(x.steps, 1):
        console.print(f"  {n}. {s['name']}: [{s['call']}]  →  {s['reply']}", highlight=False, markup=False)
    console.print(f"  {t(k + 'answer', lang)}: {x.answer or '—'}  ({x.why_stopped})", highlight=False)
    console.print(f"  {t(k + 'model.no_exec', lang)}: {x.question}{x.no_exec}", highlight=False, markup=False)
    console.print(f"  {t(k + 'model.single_shot', lang)}: {x.question}{x.single_shot}", highlight=False, markup=False)
    console.print(
        table(
            t(k + "table", lang),
            [t(k + "col.steps", lang)]
            + [t(k + "model." + c, lang) for c in CONDITIONS]
            + [t(k + "col.calls", lang), t(k + "col.refused", lang)],
            [
                [str(n)] + [r.success[c][i] for c in CONDITIONS] + [r.calls[i], r.refused[i]]
                for i, n in enumerate(r.steps_needed)
            ],
        )
    )

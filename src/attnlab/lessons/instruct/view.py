"""The terminal view of `attnlab explain instruct`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table


def show(console, r, lang, t) -> None:
    k = "explain.instruct."
    console.print(r.note, highlight=False)
    x = r.example
    console.print(f"{t(k + 'template', lang)}: {x.template}   {t(k + 'plain', lang)}: {x.plain}", highlight=False)
    for m in r.models:
        mark = "✓" if x.exact[m] else f"{x.heads_right[m]}/4"
        console.print(f"  {t(k + 'model.' + m, lang)}: {x.answers[m]}  {mark}", highlight=False)
    console.print(
        table(
            t(k + "table", lang),
            [t(k + "col.model", lang), t(k + "col.following", lang), t(k + "col.by_seed", lang)]
            + [t(k + "col.heads_right", lang), t(k + "col.in_form", lang)],
            [
                [t(k + "model." + m, lang), r.following[m], " ".join(f"{v:.3f}" for v in r.following_by_seed[m])]
                + [r.heads_right[m], r.in_form[m]]
                for m in r.models
            ],
        )
    )
    console.print(f"{t(k + 'chance', lang)}: {r.chance_head:.3f}", highlight=False)
    console.print(
        table(
            t(k + "h.lora", lang),
            [t(k + "col.method", lang), t(k + "col.trainable", lang), t(k + "col.memory", lang)],
            [[t(k + "model." + m, lang), r.trainable[m], r.memory[m]] for m in ("sft", "lora")],
        )
    )

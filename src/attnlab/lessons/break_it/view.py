"""The terminal view of `attnlab explain break`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table


def show(console, r, lang, t) -> None:
    from rich.markup import escape

    k = "explain.break_it"
    console.print(escape(r.description), style="bold")
    console.print(
        escape(
            t(f"{k}.setup", lang, steps=r.params["train_steps"], **r.setup) + t(f"{k}.took", lang, seconds=r.seconds)
        ),
        style="dim",
    )
    console.print(escape(t(f"{k}.causal_on.{r.causal_on}", lang)), style="dim")
    rows = [
        [
            x.label,
            f"{x.train_mean:.4f} ± {x.train_std:.4f}",
            f"{x.causal_mean:.4f} ± {x.causal_std:.4f}",
            f"{x.causal_min:.4f} – {x.causal_max:.4f}",
        ]
        for x in r.table
    ]
    console.print(
        table(
            t(f"{k}.h.table", lang, n=len(r.seeds)),
            [t(f"{k}.col.{c}", lang) for c in ("model", "train", "causal", "range")],
            rows,
        )
    )
    console.print(escape(t(f"{k}.prompt", lang, prompt=r.prompt, reference=r.reference)))
    console.print(escape(r.greedy_note))
    # where the broken model departs from the intact one of its seed, in reverse video
    rows = [
        [str(x.seed), x.label, escape(x.agrees) + (f"[reverse]{escape(x.departs)}[/]" if x.departs else "")]
        for x in r.runs
    ]
    console.print(table(t(f"{k}.h.greedy", lang), [t(f"{k}.col.{c}", lang) for c in ("seed", "model", "text")], rows))
    console.print(escape(r.finding))

"""The terminal view of `attnlab explain moe`: `show(console, r, lang, t)` prints the lesson's numbers; the lesson
computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table


def show(console, r, lang, t) -> None:
    k = "explain.moe."
    console.print(r.note, highlight=False)
    console.print(
        table(
            t(k + "table", lang),
            [
                t(k + "col." + c, lang)
                for c in ("model", "d_ff", "total", "active", "loss", "first", "last", "dead", "busiest")
            ],
            [
                [
                    x.label,
                    x.d_ff,
                    x.total_params,
                    x.active_params,
                    x.loss,
                    x.loss_first,
                    x.loss_last,
                    "—" if x.dead is None else x.dead,
                    "—" if x.busiest is None else f"{100 * x.busiest:.1f}%",
                ]
                for x in r.runs
            ],
        )
    )
    console.print(
        table(
            t(k + "h.routing", lang),
            [t(k + "col." + c, lang) for c in ("model", "expert", "tokens", "share", "chars")],
            [
                [
                    f"{x.label} · L{x.layer}",
                    str(x.expert) + (" ✝" if x.dead else ""),
                    x.tokens,
                    f"{100 * x.share:.1f}%",
                    x.chars,
                ]
                for x in r.experts
            ],
        )
    )
    for x in r.runs:
        if x.routing is not None:
            console.print(
                f"{x.label}: {t(k + 'balance_line', lang)} {', '.join(f'{b:.3f}' for b in x.routing.balance)}"
                f" · {t(k + 'dropped', lang)} {', '.join(str(d) for d in x.routing.dropped)}",
                highlight=False,
            )

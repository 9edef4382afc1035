"""The terminal view of `attnlab explain logit-lens`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import g, table


def show(console, r, lang, t) -> None:
    k = "explain.logit_lens."
    console.print(r.note, highlight=False)
    console.print(
        f"{t(k + 'answer_is', lang)} {r.answer} (p = {g(r.answer_p)}) · {t(k + 'settled', lang)} "
        f"{r.trained.settled} · {t(k + 'untrained_answer', lang)} {r.untrained.answer}",
        highlight=False,
    )
    if r.loss_first is not None:
        console.print(f"{t(k + 'loss', lang)} {g(r.loss_first)} → {g(r.loss_last)}", highlight=False)
    console.print(
        table(
            t(k + "h.answer", lang),
            [t(k + "col." + c, lang) for c in ("layer", "rank", "p", "u_rank", "u_p")],
            [[x.label, x.answer_rank, x.answer_p, x.untrained_rank, x.untrained_p] for x in r.rows],
        )
    )
    console.print(table(t(k + "table.tops", lang), r.top_header, r.top_rows))
    console.print(
        table(
            t(k + "h.checks", lang),
            [t(k + "col." + c, lang) for c in ("check", "max_diff", "tol", "ok")],
            [[c.text, f"{c.max_diff:.2e}", f"{c.tol:.0e}", c.ok] for c in r.checks],
        )
    )

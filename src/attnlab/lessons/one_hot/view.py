"""The terminal view of `attnlab explain one-hot`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import g, table


def show(console, r, lang, t) -> None:
    console.print(
        f"{t('explain.one_hot.corpus', lang)} {r.corpus} · |V| = {r.vocab_size} · d = {r.d_model} · "
        f"{t('explain.one_hot.loss', lang)} {g(r.loss_first)} → {g(r.loss_last)}"
    )

    for q in r.queries:
        rows = [[n.char, n.cos, n.cos_init, n.context] for n in q.neighbours]
        console.print(
            table(
                f"{q.char} ({t('explain.one_hot.count', lang)} {q.count})",
                [t(f"explain.one_hot.{k}", lang) for k in ("neighbour", "cos", "cos_init", "context")],
                rows,
            )
        )
    console.print(r.note, style="yellow")

"""The terminal view of `attnlab explain seq2seq`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import g, table


def show(console, r, lang, t) -> None:
    kinds = list(r.accuracy)
    rows = [
        [f"{n}{' *' if longer else ''}", *[r.accuracy[k][i] for k in kinds]]
        for i, (n, longer) in enumerate(zip(r.lengths, r.longer))
    ]
    console.print(
        table(
            t("explain.plot.seq2seq.accuracy", lang),
            [t("explain.seq2seq.length", lang)] + [t(f"explain.seq2seq.model.{k}", lang) for k in kinds],
            rows,
        )
    )
    console.print(f"{t('explain.seq2seq.seeds_note', lang)} {' · '.join(map(str, r.seeds))}")
    console.print(f"{t('explain.seq2seq.example_seed', lang)} {r.seeds[0]}")
    ex = r.example
    for k in kinds:
        console.print(f"{t(f'explain.seq2seq.model.{k}', lang)}: {ex.source} → {ex.prediction[k]} {g(ex.correct[k])}")
    for title, m in [
        (t("explain.seq2seq.alpha_caption", lang), ex.bahdanau),
        *[(t("explain.seq2seq.head", lang, layer=h.layer, head=h.head), h.weights) for h in r.heads],
    ]:
        rows = [
            [ex.target_tokens[i], *[("[bold red]" if j == ex.truth[i] else "") + g(w, 2) for j, w in enumerate(row)]]
            for i, row in enumerate(m)
        ]
        console.print(table(title, [""] + ex.source_tokens, rows))

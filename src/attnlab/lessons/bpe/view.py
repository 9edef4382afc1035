"""The terminal view of `attnlab explain bpe`: `show(console, r, lang, t)` prints the lesson's numbers; the lesson
computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table

COLUMNS = ("zh", "zh_shuffled", "en", "en_shuffled")


def show(console, r, lang, t) -> None:
    k = "explain.bpe."
    console.print(r.note, highlight=False)
    console.print(
        " | ".join(p.shown for p in r.pieces) + f"   ({len(r.pieces)} · {t(k + 'whole', lang)}: {r.whole})",
        highlight=False,
    )
    console.print(f"{t(k + 'longest', lang)}: {' '.join(x[0] for x in r.examples)}", highlight=False)
    console.print(
        table(
            t(k + "table", lang),
            [t(k + "col.vocab", lang)]
            + [t(k + "col." + c, lang) for c in COLUMNS]
            + [t(k + "col.multi", lang), t(k + "col.multi_shuffled", lang), t(k + "col.embedding", lang)],
            [
                [str(v)]
                + [r.tokens_per_char[c][i] for c in COLUMNS]
                + [r.multi_han["text"][i], r.multi_han["shuffled"][i], f"{r.embedding[i]:,}"]
                for i, v in enumerate(r.sizes)
            ],
        )
    )

"""The terminal view of `attnlab explain rag`: `show(console, r, lang, t)` prints the lesson's numbers; the lesson
computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table


def show(console, r, lang, t) -> None:
    k = "explain.rag."
    console.print(r.note, highlight=False)
    console.print(
        table(
            t(k + "h.recall", lang),
            [t(k + "col.condition", lang), t(k + "col.recall", lang), t(k + "col.by_seed", lang)],
            [[t(k + c, lang), r.recall[c], " · ".join(f"{v:.3f}" for v in r.recall_by_seed[c])] for c in r.conditions],
        )
    )
    console.print(
        table(
            t(k + "h.retrieval", lang),
            [t(k + "col.retriever", lang), *[f"recall@{n}" for n in r.ks]],
            [[t(k + name, lang), *r.retrieval_recall[name]] for name in ("bm25", "dense", "dense_untrained")],
        )
    )
    ex = r.example
    console.print(f"{t(k + 'query', lang)} {ex.query} → {ex.answer or '?'}", highlight=False)
    for hit in ex.bm25:
        console.print(f"  BM25 {hit['score']:.2f}  {hit['text']}", highlight=False)
    for c, line in ex.written.items():
        console.print(f"  {t(k + c, lang)}: {line} {'✓' if line == ex.answer else '✗'}", highlight=False)

"""The terminal view of `attnlab explain encoder-uses`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table


def show(console, r, lang, t) -> None:
    k = "explain.encoder_uses."
    console.print(r.note, highlight=False)
    s = r.sentences
    if s.installed:
        rows = [[text, near, "✓" if hit else "✗"] for text, near, hit in zip(s.sentences, s.nearest, s.hits)]
        console.print(
            table(t(k + "h.vectors", lang), [t(k + "col.sentence", lang), t(k + "col.nearest", lang), ""], rows)
        )
        console.print(f"{t(k + 'query', lang)} {s.query}", highlight=False)
        for near in s.query_nearest:
            console.print(f"  {near['cosine']:.3f}  {near['sentence']}", highlight=False)
    else:
        console.print(r.claims[-1].text, highlight=False)
    console.print(
        table(
            t(k + "h.compare", lang),
            [t(k + "col.use", lang), t(k + "encoder", lang), t(k + "baseline", lang)],
            [
                [t(k + "classify", lang), " · ".join(f"{a:.3f}" for a in r.accuracy["encoder"]), r.accuracy["bag"]],
                [t(k + "tag", lang), " · ".join(f"{a:.3f}" for a in r.found["encoder"]), r.found["frequency"]],
            ],
        )
    )
    c = r.couplet
    console.print(f"{c.text}  {t(k + 'p_spoilt', lang)} {c.p_spoilt:.3f}", highlight=False)
    console.print(
        table(
            t(k + "h.tags", lang),
            [t(k + "col.char", lang), t(k + "p_wrong", lang), t(k + "col.frequency", lang)],
            [
                [("*" if i in c.wrong else "") + ch, p, f]
                for i, (ch, p, f) in enumerate(zip(c.chars, c.p_wrong, c.frequency))
            ],
        )
    )

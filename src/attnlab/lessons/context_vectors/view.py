"""The terminal view of `attnlab explain context-vectors`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table


def show(console, r, lang, t) -> None:
    console.print(f"{''.join(r.tokens_a)}  |  {''.join(r.tokens_b)}   →  {r.word} (position {r.position})")
    keys = ("causal_l2", "causal_cos", "causal_max", "encoder_l2", "encoder_cos", "encoder_min")
    rows = [
        [str(x.layer), x.causal_l2, x.causal_cos, x.causal_max_l2, x.encoder_l2, x.encoder_cos, x.encoder_min_l2]
        for x in r.layers
    ]
    console.print(
        table(
            t("explain.context_vectors.table", lang),
            [t("explain.context_vectors.layer", lang)] + [t(f"explain.context_vectors.{k}", lang) for k in keys],
            rows,
        )
    )
    console.print(r.note, style="yellow")

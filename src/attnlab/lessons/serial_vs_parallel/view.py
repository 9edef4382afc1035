"""The terminal view of `attnlab explain serial-vs-parallel`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table


def show(console, r, lang, t) -> None:
    rows = [
        [
            str(p.n),
            p.rnn_seconds * 1e3,
            p.attention_seconds * 1e3,
            p.rnn_ops,
            p.attention_ops,
            p.rnn_steps,
            p.attention_steps,
            p.rnn_path,
            p.attention_path,
        ]
        for p in r.points
    ]
    console.print(
        table(
            t("explain.serial.table", lang),
            ["n", "RNN ms", "attn ms", "RNN ops", "attn ops", "RNN steps", "attn steps", "RNN path", "attn path"],
            rows,
        )
    )

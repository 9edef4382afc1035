"""The terminal view of `attnlab explain complexity`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table


def show(console, r, lang, t) -> None:
    rows = [[t(f"explain.plot.cx.{x.name}", lang), x.order, x.flops, x.flops / r.total_flops] for x in r.terms]
    console.print(
        table(
            t("explain.complexity.table", lang, n=r.params["n"], d=r.params["d_model"]),
            ["", "O(·)", "FLOPs", t("explain.ui.share", lang)],
            rows,
        )
    )
    rows = [[t(f"explain.plot.cx.{c.part}", lang), c.analytic, c.counted, c.analytic == c.counted] for c in r.checks]
    console.print(table("FlopCounterMode", ["", t("explain.plot.cx.analytic", lang), "counted", ""], rows))
    console.print(
        t(
            "explain.complexity.summary_line",
            lang,
            block=r.crossover_block,
            attn=r.crossover_attention,
            mib=r.weights_bytes / 2**20,
            one=r.weights_bytes_one_head / 2**20,
        )
    )
    rows = [[str(p.n), p.seconds * 1e3] for p in r.time_points]
    console.print(table(t("explain.complexity.time", lang, s=f"{r.time_slope:.2f}"), ["n", "ms"], rows))
    rn = r.rnn
    console.print(
        table(
            t("explain.complexity.rnn_table", lang, n=rn.n, d=rn.d),
            ["", "FLOPs", t("explain.complexity.serial", lang)],
            [
                [t("explain.complexity.rnn_layer", lang), rn.rnn_flops, rn.rnn_serial_steps],
                [t("explain.complexity.attn_layer", lang), rn.attention_flops, rn.attention_serial_steps],
                [t("explain.complexity.attn_quad", lang), rn.attention_quadratic, ""],
            ],
        )
    )
    s = r.params_share
    console.print(
        table(
            t("explain.complexity.params_table", lang, d=s.d, d_ff=s.d_ff),
            ["", t("explain.complexity.with_bias", lang), t("explain.complexity.weights_only", lang)],
            [
                [t("explain.complexity.attention", lang), s.attention, s.weights_attention],
                ["FFN", s.ffn, s.weights_ffn],
                [t("explain.complexity.norms", lang), s.norms, ""],
                [t("explain.complexity.ffn_share", lang), s.ffn_share, s.weights_share],
            ],
        )
    )

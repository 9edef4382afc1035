"""The terminal view of `attnlab explain flash`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import g, table


def show(console, r, lang, t) -> None:
    h = r.hand
    key = lambda name: t(f"explain.flash.{name}", lang)  # noqa: E731
    console.print(f"{key('query')} ({', '.join(g(x) for x in h.q)})")
    rows = [
        [str(j + 1), f"({g(k[0])}, {g(k[1])})", f"({g(v[0])}, {g(v[1])})", h.scores[j], h.weights[j]]
        for j, (k, v) in enumerate(zip(h.k, h.v))
    ]
    console.print(table(key("keys_table"), [key("key"), "k", "v", key("score"), key("weight")], rows))
    rows = [
        [
            str(s.tile),
            f"{s.first}–{s.last}",
            s.tile_max,
            s.m_old,
            s.m,
            s.rescale,
            s.l,
            f"({g(s.out[0])}, {g(s.out[1])})",
        ]
        for s in h.steps
    ]
    console.print(
        table(
            key("steps_table"),
            [key("tile"), key("keys"), key("tile_max"), key("m_old"), key("m_new"), key("rescale"), "l", key("out")],
            rows,
        )
    )
    console.print(
        f"{key('flash_out')} ({', '.join(g(x) for x in h.flash_out)}) · {key('attention_out')} "
        f"({', '.join(g(x) for x in h.attention_out)}) · {key('diff')} {g(h.max_abs_diff)}"
    )
    rows = [
        [str(pt.n), pt.plain_bytes, pt.tiled_bytes, pt.plain_largest, pt.tiled_largest, pt.scores_bytes]
        for pt in r.memory
    ]
    console.print(
        table(
            key("memory_table"),
            [
                "n",
                key("plain"),
                key("tiled"),
                f"{key('plain')}: {key('largest')}",
                f"{key('tiled')}: {key('largest')}",
                key("scores_bytes"),
            ],
            rows,
        )
    )
    console.print(
        f"{key('growth')}: {g(r.plain_growth)} / {g(r.tiled_growth)} · {key('slope')}: "
        f"{g(r.plain_slope)} / {g(r.tiled_slope)}"
    )
    io = r.traffic
    console.print(
        table(
            key("io_table"),
            ["", ""],
            [
                [key("standard"), io.standard],
                [key("flash"), io.flash],
                [key("ratio"), io.ratio],
                [key("sram"), io.m_elements],
                ["B_c", io.block_c],
                ["T_c", io.t_c],
            ],
        )
    )
    console.print(
        table(key("time_table"), ["", t("explain.ui.seconds", lang)], [[x.label, x.seconds] for x in r.timings])
    )
    rows = [[m.label, m.allowed, m.computed, m.closed_form, m.allowed_share, m.computed_share] for m in r.masks]
    console.print(
        table(
            key("masks_table"),
            [
                key("mask"),
                key("allowed"),
                key("computed"),
                key("closed_form"),
                key("allowed_share"),
                key("computed_share"),
            ],
            rows,
        )
    )
    rows = [
        [str(x.layers), x.sliding_first, x.sliding_formula, x.sliding_back, x.sparse_unseen, x.sparse_formula]
        for x in r.reach
    ]
    console.print(
        table(
            key("reach_table"),
            [
                key("layers"),
                key("sliding_first"),
                key("sliding_formula"),
                key("sliding_back"),
                key("sparse_unseen"),
                key("sparse_formula"),
            ],
            rows,
        )
    )

"""The terminal view of `attnlab explain scale`: `show(console, r, lang, t)` prints the lesson's numbers; the lesson
computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table


def _why(row, lang, t) -> str:
    return t(f"explain.scale.differs.{row.differs}", lang) if row.differs else ""


def _e(x) -> str:
    return f"{x:.3g}" if x else ""


def show(console, r, lang, t) -> None:
    k = "explain.scale."
    console.print(
        table(
            t(k + "table", lang),
            [
                "",
                t(k + "layers_col", lang),
                t(k + "counted", lang),
                t(k + "published_col", lang),
                "Δ %",
                t(k + "non_embedding", lang),
            ],
            [
                [x.name + (" *" if x.differs else ""), x.layers, x.counted, x.published, 100 * x.off, x.non_embedding]
                for x in r.published
            ],
        )
    )
    for x in r.published:
        if x.differs:
            console.print(f"* {x.name}: {_why(x, lang, t)}", highlight=False)
    console.print(
        table(
            t(k + "compute_table", lang, gflops=r.machine.flops_per_s / 1e9),
            [
                "",
                t(k + "tokens", lang),
                "6·N·D",
                t(k + "counted_flops", lang),
                t(k + "published_flops", lang),
                t(k + "days", lang),
            ],
            [
                [
                    x.name,
                    _e(x.tokens),
                    _e(x.train_flops_6nd),
                    _e(x.train_flops),
                    _e(x.published_train_flops),
                    _e(x.days_here),
                ]
                for x in r.published
                if x.tokens
            ],
        )
    )
    console.print(
        table(
            t(k + "vocab_table", lang),
            ["", t(k + "size", lang), "× 768", "× 4096"],
            [[v.name, v.size, v.params_768, v.params_4096] for v in r.vocabularies],
        )
    )
    up = r.scale_up
    console.print(
        table(
            t(k + "up.table", lang, big=up.big),
            ["", t(k + "up.lab", lang), up.big, t(k + "up.times", lang), t(k + "up.reaches", lang)],
            [[t(k + "up." + q.what, lang), q.lab, q.big, _e(q.times), "✓" if q.reaches else "✗"] for q in up.ratios],
        )
    )
    if r.yours is not None:
        y = r.yours
        console.print(
            table(
                t(k + "yours", lang),
                ["", ""],
                [
                    [t(k + "counted", lang), y.counted],
                    [t(k + "non_embedding", lang), y.non_embedding],
                    *[[t(k + "part." + name, lang), n] for name, n in y.parts.items() if n],
                    [t(k + "per_token", lang), y.flops_per_token],
                    [t(k + "tokens", lang), y.tokens],
                    [t(k + "counted_flops", lang), _e(y.train_flops)],
                    [t(k + "days", lang), y.days_here],
                ],
            )
        )
    if r.sweep is not None:
        show_sweep(console, r.sweep, lang, t)


def show_sweep(console, s: dict, lang, t) -> None:
    k = "explain.scale."
    console.print(t(k + "sweep_from", lang, folder=s["folder"], corpus=s.get("corpus", "?"), runs=len(s["runs"])))
    fit = s.get("fit")
    if fit:
        console.print(
            t(
                k + "sweep_law",
                lang,
                alpha=fit["alpha"],
                alo=fit["alpha_interval"][0],
                ahi=fit["alpha_interval"][1],
                beta=fit["beta"],
                blo=fit["beta_interval"][0],
                bhi=fit["beta_interval"][1],
                verdict=t(k + "verdict." + ("shown" if fit["shown"] else "not_shown"), lang, reason=fit["reason"]),
            )
        )
    rows = [
        [
            o["flops"],
            (o.get("measured") or {}).get("n_params", ""),
            (o.get("measured") or {}).get("tokens_per_param", ""),
            (o.get("fitted") or {}).get("tokens_per_param", ""),
        ]
        for o in s["optimum"]
    ]
    console.print(
        table(
            t(k + "optimum_table", lang), ["FLOPs", "N", t(k + "tpp_measured", lang), t(k + "tpp_fitted", lang)], rows
        )
    )
    em = s.get("emergence")
    if em and em["rows"]:
        metrics = ("val_loss", "form_score", "form_prob", "exact_recall", "recall_prob")
        console.print(
            table(
                t(k + "emergence_table", lang),
                ["N", *[t(k + "metric." + m, lang) for m in metrics]],
                [[row["n_params"], *[row[m] if row[m] is not None else "—" for m in metrics]] for row in em["rows"]],
            )
        )
        for metric, sh in em["shapes"].items():
            console.print(shape_text(metric, sh, lang, t), highlight=False)


def shape_text(metric: str, sh: dict, lang, t) -> str:
    """'share in regular form (exact): gradual; it falls with size'."""
    k = "explain.scale."
    moved = sh["shape"] in ("jump", "gradual") and sh.get("rise")
    direction = t(k + "direction." + ("up" if sh["rise"] > 0 else "down"), lang) if moved else ""
    return t(
        k + "shape_line",
        lang,
        metric=t(k + "metric." + metric, lang),
        shape=t(k + "shape." + sh["shape"], lang),
        direction=direction,
    )

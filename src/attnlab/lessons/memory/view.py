"""The terminal view of `attnlab explain memory`: `show(console, r, lang, t)` prints the lesson's numbers; the lesson
computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table

PER_PARAM = ("weights", "gradients", "master_weights", "adam_m", "adam_v")


def show(console, r, lang, t) -> None:
    k = "explain.memory."
    console.print(
        table(
            t(k + "h.per_param", lang),
            ["", *[t(k + "pp." + p, lang) for p in PER_PARAM], t(k + "total", lang)],
            [[prec, *[row.get(p, "—") for p in PER_PARAM], row["total"]] for prec, row in r.per_param_bytes.items()],
        )
    )
    c = r.lab.config
    console.print(
        t(
            k + "p.lab",
            lang,
            layers=c["n_layers"],
            d=c["d_model"],
            heads=c["n_heads"],
            ctx=r.lab.tokens,
            batch=r.lab.batch,
        ),
        highlight=False,
    )
    console.print(
        table(
            t(k + "h.lab", lang),
            [t(k + "part_col", lang), t(k + "measured", lang), t(k + "formula_col", lang), t(k + "diff", lang)],
            [[t(k + "part." + p, lang), r.measured[p], r.formula[p], r.difference[p]] for p in r.measured],
        )
    )
    console.print(
        table(
            t(k + "moments", lang),
            [t(k + "moment_col", lang), t(k + "bytes", lang)],
            [
                [t(k + "moment." + name, lang), r.moments[name]]
                for name in ("start", "forward", "peak", "backward", "step")
            ],
        )
    )
    console.print(
        t(k + "cuda_peak", lang) + f" {r.cuda_peak:,}" if r.cuda_peak is not None else t(k + "no_cuda", lang),
        highlight=False,
    )
    p = r.params
    console.print(t(k + "p.published", lang), highlight=False)
    console.print(f"{t(k + 'settings', lang)} {p['context']} / {p['batch']} / {p['dtype']}", highlight=False)
    rows = [*r.published, *([r.chosen] if r.chosen not in r.published else [])]
    s = k + "short."
    console.print(
        table(
            t(k + "table_gb", lang),
            [
                "",
                t(s + "context", lang),
                t(s + "heads", lang),
                t(s + "weights", lang),
                t(s + "kv_seq", lang),
                t(s + "kv_mha", lang),
                t(s + "inference", lang),
                *[t(s + "fits", lang, gb=gb) for gb in r.cards_gb],
            ],
            [
                [
                    e.name,
                    e.context,
                    f"{e.kv_heads}/{e.heads}",
                    *[_gb(e.gb[name]) for name in ("weights", "kv_cache_per_sequence", "kv_cache_mha", "inference")],
                    *e.fits.values(),
                ]
                for e in rows
            ],
        )
    )
    console.print(
        table(
            t(k + "training_table", lang),
            ["", *[t(s + name, lang) for name in ("state", "acts", "acts_re", "train_fp32", "train_mixed")]],
            [
                [
                    e.name,
                    *[
                        _gb(e.gb[name])
                        for name in (
                            "state",
                            "activations",
                            "activations_recomputed",
                            "training_fp32",
                            "training_mixed",
                        )
                    ],
                ]
                for e in rows
            ],
        )
    )
    e = r.chosen
    console.print(
        f"{e.name}: {t(k + 'row.kv_seq_bytes', lang)} {e.kv_cache_per_sequence:,} · "
        f"{t(k + 'row.kv_total', lang)} {r.kv_cache_bytes:,}",
        highlight=False,
    )


def _gb(x: float) -> str:
    return f"{x:.3g}"

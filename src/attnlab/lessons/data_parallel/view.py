"""The terminal view of `attnlab explain data-parallel`: `show(console, r, lang, t)` prints the lesson's numbers;
the lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import g, table


def show(console, r, lang, t) -> None:
    k = "explain.data_parallel."
    run, s = r.run, r.split
    console.print(
        t(
            k + "setup",
            lang,
            world=run.world,
            b=run.b,
            two_b=run.world * run.b,
            steps=run.steps,
            optimizer=run.optimizer,
            n=run.n_params,
            seconds=run.seconds,
        ),
        highlight=False,
    )
    console.print(
        table(
            t(k + "h.run", lang),
            ["", t(k + "col.ddp", lang), t(k + "col.alone", lang)],
            [
                [t(k + "row.grad", lang), run.grad_diff, run.grad_diff_alone],
                [t(k + "row.weights", lang), run.weight_diff, run.alone_diff],
                [t(k + "row.ranks", lang), run.ranks_diff, run.alone_ranks_diff],
                [t(k + "row.tolerance", lang), r.tolerance, r.tolerance],
            ],
        )
    )
    console.print(
        table(
            t(k + "h.losses", lang),
            [
                t(k + "col.step", lang),
                t(k + "col.one", lang),
                t(k + "col.rank", lang, r=0),
                t(k + "col.rank", lang, r=1),
            ],
            [[i + 1, one, *ranks] for i, (one, *ranks) in enumerate(zip(run.losses_one, *run.losses_ranks))],
        )
    )
    console.print(
        table(
            t(k + "h.bytes", lang),
            ["", ""],
            [
                [t(k + "row.n", lang), r.n_params],
                [t(k + "row.buckets", lang), " + ".join(g(x) for x in run.buckets)],
                [t(k + "row.measured", lang), run.bytes_per_step[0]],
                [t(k + "row.expected", lang), r.grad_bytes],
                [f"{t(k + 'row.frozen', lang)} {run.frozen}", run.frozen_bytes],
                [t(k + "row.frozen_expected", lang), f"{g(run.frozen_trainable)} × 4"],
                [t(k + "row.ring", lang, k=run.world), r.ring_bytes],
                [f"{t(k + 'row.ring_k', lang)} k = {s.k}", r.ring_bytes_k],
                [f"{t(k + 'row.big_grad', lang)} {s.model}", s.grad_bytes_bf16],
                [f"{t(k + 'row.big_ring', lang)} k = {s.k}", s.ring_bytes],
            ],
        )
    )
    console.print(
        table(
            t(k + "h.zero", lang, model=s.model, n=s.n_params, k=s.k),
            ["", t(k + "col.mixed", lang), "GB", t(k + "col.fits", lang), "fp32 B", "GB", t(k + "col.fits", lang)],
            [[x.label, x.mixed, x.mixed_gb, x.mixed_fits, x.fp32, x.fp32_gb, x.fp32_fits] for x in s.stages],
        )
    )
    console.print(
        table(
            t(k + "h.tensor", lang),
            ["", ""],
            [
                [t(k + "row.tp_page", lang), s.tp],
                [t(k + "row.tp_max", lang), s.tp_max],
                [t(k + "row.tp_heads", lang), f"{s.tp_heads_per_rank} / {s.tp_kv_heads_per_rank}"],
                [t(k + "row.tp_ff", lang), s.tp_ff_per_rank],
                [t(k + "row.tp_block", lang), s.tp_block_bytes],
                [f"{t(k + 'row.tp_allreduce', lang)} {g(s.tokens)}", s.tp_allreduce_bytes],
                [t(k + "row.tp_layer", lang), s.tp_layer_bytes],
            ],
        )
    )
    console.print(
        table(
            t(k + "h.pipeline", lang),
            ["", ""],
            [
                [t(k + "row.pp", lang), s.pp],
                [t(k + "row.pp_layers", lang), s.pp_layers_per_stage],
                [f"{t(k + 'row.bubble', lang)} m = {s.micro}", s.bubble],
                [t(k + "row.bubble_one", lang), s.bubble_one],
                [t(k + "row.pp_send", lang), s.pp_send_bytes],
            ],
        )
    )

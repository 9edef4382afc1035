"""The figure of `attnlab explain complexity` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it computes nothing."""

from __future__ import annotations

import numpy as np

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels


def plot(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(2, 2)
    ax = fig.add_subplot(grid[0, 0])
    names = [term.name for term in r.terms]
    colors = [RED if term.order == "n^2 d" else BLUE for term in r.terms]
    ax.barh(range(len(names)), [term.flops for term in r.terms], color=colors)
    ax.set_yticks(range(len(names)), [tr(f"cx.{n}") for n in names])
    ax.invert_yaxis()
    for i, term in enumerate(r.terms):
        ax.text(term.flops, i, f" {term.flops:,.3g}", va="center", fontsize=8)
    ax.set(xlabel="FLOPs", title=tr("cx.terms_title", n=r.params["n"], d=r.params["d_model"]))

    ax = fig.add_subplot(grid[0, 1])
    d, d_ff = r.params["d_model"], r.params["d_model"] * r.params["ff_mult"]
    n_grid = np.logspace(0, np.log10(max(8 * r.crossover_block, 2 * r.params["n"])), 200)
    ax.loglog(n_grid, 4 * n_grid**2 * d, color=RED, label="4 n² d")
    ax.loglog(n_grid, 8 * n_grid * d * d + 4 * n_grid * d * d_ff, color=BLUE, label="8 n d² + 4 n d d_ff")
    ax.axvline(r.crossover_block, color=INK, lw=1, ls="--")
    ax.text(r.crossover_block, ax.get_ylim()[0] * 10, f" n = {r.crossover_block}", fontsize=8)
    ax.axvline(r.params["n"], color=GREY, lw=1, ls=":")
    ax.set(xlabel="n", ylabel="FLOPs", title=tr("cx.cross_title"))
    ax.legend(fontsize=8)

    ax = fig.add_subplot(grid[1, 0])
    ns = [p.n for p in r.time_points]
    ax.loglog(ns, [p.seconds * 1e3 for p in r.time_points], "o-", color=INK, base=2)
    if len(ns) >= 2:
        ref = np.array(ns, dtype=float)
        t0 = r.time_points[-1].seconds * 1e3
        for slope, color in ((1, BLUE), (2, RED)):
            ax.loglog(
                ref, t0 * (ref / ref[-1]) ** slope, ls=":", color=color, lw=1, label=tr("cx.slope_ref", s=slope), base=2
            )
        ax.legend(fontsize=8)
    ax.set(xlabel="n", ylabel="ms", title=tr("cx.time_title", s=r.time_slope, d=r.params["time_d_model"]))

    ax = fig.add_subplot(grid[1, 1])
    ax.axis("off")
    rows = [
        [tr(f"cx.{c.part}"), f"{c.analytic:,}", f"{c.counted:,}", "✓" if c.analytic == c.counted else "✗"]
        for c in r.checks
    ]
    table = ax.table(cellText=rows, colLabels=[tr("cx.part"), tr("cx.analytic"), "FlopCounterMode", ""], loc="center")
    table.auto_set_font_size(False)
    table.set_fontsize(8)
    table.scale(1, 1.4)
    ax.set_title(tr("cx.check_title", mib=r.weights_bytes / 2**20), fontsize=10)
    fig.suptitle(tr("cx.title"), fontsize=13)
    fig.tight_layout()

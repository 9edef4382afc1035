"""The figure of `attnlab explain flash` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels


def plot(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(2, 2)

    ax = fig.add_subplot(grid[0, 0])  # the hand example: m and l, and the output converging, tile by tile
    h = r.hand
    tiles = [s.tile for s in h.steps]
    ax.plot(tiles, [s.m for s in h.steps], "^-", color=RED, label=tr("flash.m"))
    ax.plot(tiles, [s.l for s in h.steps], "o-", color=BLUE, label=tr("flash.l"))
    for i, color in ((0, INK), (1, GREY)):
        ax.plot(tiles, [s.out[i] for s in h.steps], "s--", color=color, ms=4, label=tr("flash.out", i=i + 1))
        ax.axhline(h.attention_out[i], color=color, lw=0.8, ls=":", label=tr("flash.final", i=i + 1))
    ax.set(xlabel=tr("flash.tile"), title=tr("flash.hand_title"), xticks=tiles)
    ax.legend(fontsize=7, loc="best")

    ax = fig.add_subplot(grid[0, 1])  # peak memory against n, log-log
    ns = [pt.n for pt in r.memory]
    ax.loglog(ns, [pt.plain_bytes for pt in r.memory], "o-", color=RED, base=2, label=tr("flash.plain"))
    ax.loglog(ns, [pt.tiled_bytes for pt in r.memory], "o-", color=BLUE, base=2, label=tr("flash.tiled"))
    ax.loglog(ns, [pt.scores_bytes for pt in r.memory], ":", color=GREY, base=2, label=tr("flash.one_matrix"))
    ax.set(
        xlabel="n", ylabel=tr("flash.bytes"), title=tr("flash.memory_title", plain=r.plain_growth, tiled=r.tiled_growth)
    )
    ax.legend(fontsize=8)

    ax = fig.add_subplot(grid[1, 0])  # slow-memory traffic by formula
    io = r.traffic
    ax.bar([tr("flash.standard"), tr("flash.flash")], [io.standard, io.flash], color=[RED, BLUE])
    for i, value in enumerate((io.standard, io.flash)):
        ax.text(i, value, f"{value:,}", ha="center", va="bottom", fontsize=8)
    ax.set(ylabel=tr("flash.elements"), title=tr("flash.io_title", n=io.n, d=io.d))

    ax = fig.add_subplot(grid[1, 1])  # the share of n^2 each mask allows, and what the tiles compute
    names = [tr(f"flash.mask.{m.name}") for m in r.masks]
    y = range(len(r.masks))
    ax.barh(
        [i + 0.2 for i in y], [m.computed_share for m in r.masks], height=0.4, color=BLUE, label=tr("flash.computed")
    )
    ax.barh([i - 0.2 for i in y], [m.allowed_share for m in r.masks], height=0.4, color=GREY, label=tr("flash.allowed"))
    ax.set_yticks(list(y), names)
    ax.invert_yaxis()
    ax.set(xlim=(0, 1.05), title=tr("flash.masks_title"))
    ax.legend(fontsize=8)
    fig.suptitle(tr("flash.title"), fontsize=13)
    fig.tight_layout()

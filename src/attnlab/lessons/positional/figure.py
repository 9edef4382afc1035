"""The figure of `attnlab explain positional` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, RED, Labels, heat, note


def plot(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(2, 2, width_ratios=(1.2, 1))
    ax = fig.add_subplot(grid[:, 0])
    im = heat(ax, r.table, cmap="RdBu_r", vmin=-1, vmax=1)
    ax.set(xlabel=tr("pos.dimension"), ylabel=tr("pos.position"), title=tr("pos.table_title"))
    fig.colorbar(im, ax=ax, fraction=0.046)

    ax = fig.add_subplot(grid[0, 1])
    for dim, values in r.curves.items():
        ax.plot(values, lw=1.4, label=tr("pos.dim", d=dim))
    ax.set(xlabel=tr("pos.position"), ylabel="PE", title=tr("pos.curves_title"))
    ax.legend(fontsize=7, ncol=2, loc="lower left")

    ax = fig.add_subplot(grid[1, 1])
    errors = [max(rot.max_error, 1e-18) for rot in r.rotations]
    ax.semilogy([rot.i for rot in r.rotations], errors, "o", color=BLUE, ms=3)
    ax.axhline(1e-6, color=RED, lw=1, ls="--", label=tr("pos.threshold"))
    ax.set(xlabel=tr("pos.frequency"), ylabel=tr("pos.error"), title=tr("pos.rot_title", delta=r.params["delta"]))
    ax.set_ylim(1e-18, 1e-3)
    ax.legend(fontsize=8)
    fig.suptitle(tr("pos.title"), fontsize=13)
    fig.tight_layout()
    note(fig, r.note)

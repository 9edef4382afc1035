"""The figure of `attnlab explain serial-vs-parallel` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it computes nothing."""

from __future__ import annotations

import numpy as np

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels


def _chain_and_star(ax, n: int, tr: Labels) -> None:
    """003 fig 1.1 redrawn: the RNN chain (path n-1) above, attention's direct edges (path 1) below."""
    xs = np.arange(n)
    ax.plot(xs, [1] * n, color=GREY, lw=1, zorder=1)
    for x in xs[:-1]:
        ax.annotate("", (x + 0.78, 1), (x + 0.22, 1), arrowprops=dict(arrowstyle="->", color=INK, lw=1))
    ax.scatter(xs, [1] * n, s=420, color="white", edgecolor=INK, zorder=2)
    for x in xs:
        ax.text(x, 1, f"h{x + 1}" if x < n - 1 else "hₙ", ha="center", va="center", fontsize=8, zorder=3)
    for a in range(n):
        for b in range(a + 1, n):
            rad = 0.35 if (a, b) == (0, n - 1) else 0.15  # arcs bend below the row, away from the chain
            color, lw = (RED, 2) if (a, b) == (0, n - 1) else ("#d9d9d9", 0.8)
            ax.annotate(
                "",
                (b, 0),
                (a, 0),
                arrowprops=dict(arrowstyle="-", color=color, lw=lw, connectionstyle=f"arc3,rad={rad}"),
            )
    ax.scatter(xs, [0] * n, s=420, color="white", edgecolor=RED, zorder=2)
    for x in xs:
        ax.text(x, 0, f"t{x + 1}" if x < n - 1 else "tₙ", ha="center", va="center", fontsize=8, zorder=3)
    ax.text(n - 0.3, 1, tr("svp.rnn_path"), va="center", fontsize=9)
    ax.text(n - 0.3, 0, tr("svp.attn_path"), va="center", fontsize=9, color=RED)
    ax.set_xlim(-0.6, n + 2.4)
    ax.set_ylim(-1.3, 1.4)
    ax.axis("off")


def plot(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(2, 2)
    ns = [p.n for p in r.points]
    ax = fig.add_subplot(grid[0, 0])
    ax.loglog(ns, [p.rnn_seconds * 1e3 for p in r.points], "o-", color=BLUE, label="RNN", base=2)
    ax.loglog(ns, [p.attention_seconds * 1e3 for p in r.points], "s-", color=RED, label=tr("svp.attention"), base=2)
    ax.set(xlabel="n", ylabel="ms", title=tr("svp.time_title"))
    ax.legend(fontsize=8)
    ax = fig.add_subplot(grid[0, 1])
    ax.loglog(ns, [p.rnn_ops for p in r.points], "o-", color=BLUE, label="RNN", base=2)
    ax.loglog(ns, [p.attention_ops for p in r.points], "s-", color=RED, label=tr("svp.attention"), base=2)
    ax.set(xlabel="n", ylabel=tr("svp.ops"), title=tr("svp.ops_title"))
    ax.legend(fontsize=8)
    _chain_and_star(fig.add_subplot(grid[1, :]), 7, tr)
    fig.suptitle(tr("svp.title"), fontsize=13)
    fig.tight_layout()

"""The figure of `attnlab explain one-hot` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it computes nothing."""

from __future__ import annotations

import numpy as np

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels, heat


def plot(r, fig, tr: Labels) -> None:
    ax1, ax2, ax3 = fig.subplots(1, 3)
    V = r.vocab_size
    shown = min(V, 40)
    heat(ax1, np.eye(shown), vmin=-1, vmax=1, cmap="RdBu_r")
    ax1.set_title(tr("oh.onehot", V=V), fontsize=10)
    chars = [q.char for q in r.queries] + [n.char for q in r.queries for n in q.neighbours]
    order = list(dict.fromkeys(chars))[:24]
    index = {q.char: {n.char: n.cos for n in q.neighbours} for q in r.queries}
    grid = np.full((len(r.queries), len(order)), np.nan)
    for i, q in enumerate(r.queries):
        for j, c in enumerate(order):
            grid[i, j] = 1.0 if c == q.char else index[q.char].get(c, np.nan)
    heat(ax2, grid, xticks=order, yticks=[q.char for q in r.queries], vmin=-1, vmax=1, cmap="RdBu_r")
    ax2.set_title(tr("oh.dense", d=r.d_model), fontsize=10)
    for q, color in zip(r.queries, (BLUE, RED, INK, GREY, "#27ae60", "#e67e22", "#8e44ad", "#16a085")):
        ax3.scatter([n.context for n in q.neighbours], [n.cos for n in q.neighbours], color=color, label=q.char)
        for n in q.neighbours:
            ax3.annotate(n.char, (n.context, n.cos), fontsize=8, xytext=(3, 2), textcoords="offset points")
    ax3.set(xlabel=tr("oh.context"), ylabel=tr("oh.cos"), title=tr("oh.scatter"))
    ax3.legend(fontsize=8)
    fig.suptitle(tr("oh.title", corpus=r.corpus), fontsize=12)
    fig.tight_layout()

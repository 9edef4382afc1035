"""The figure of `attnlab explain multihead` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it computes nothing."""

from __future__ import annotations

import numpy as np

from attnlab.lessons.common.figure import BLUE, RED, Labels, heat


def plot(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(2, 3)
    ax = fig.add_subplot(grid[0, :])
    labels = [tr("mh.params"), "FLOPs: addmm", "FLOPs: bmm", tr("mh.weights")]
    one = [
        r.one_head.params,
        r.one_head.flops_by_op.get("addmm", 0),
        r.one_head.flops_by_op.get("bmm", 0),
        r.one_head.weight_entries,
    ]
    many = [
        r.many_heads.params,
        r.many_heads.flops_by_op.get("addmm", 0),
        r.many_heads.flops_by_op.get("bmm", 0),
        r.many_heads.weight_entries,
    ]
    x = np.arange(len(labels))
    ax.bar(x - 0.2, one, width=0.4, color=BLUE, label=tr("mh.one", d=r.one_head.d_k))
    ax.bar(x + 0.2, many, width=0.4, color=RED, label=tr("mh.many", h=r.many_heads.n_heads, d=r.many_heads.d_k))
    for xi, (a, b) in enumerate(zip(one, many)):
        ax.text(xi - 0.2, a, f"{a:,}", ha="center", va="bottom", fontsize=7)
        ax.text(xi + 0.2, b, f"{b:,}", ha="center", va="bottom", fontsize=7)
    ax.set_yscale("log")
    ax.set_xticks(x, labels)
    ax.set_title(tr("mh.count_title", d=r.params["d_model"], n=r.params["n"]))
    ax.legend(fontsize=8)
    shown = r.heads or r.hand_built_heads  # the trained two heads of the first seed, else the hand-built ones
    for k, head in enumerate(shown):
        ax = fig.add_subplot(grid[1, k])
        heat(ax, head.weights, xticks=["0", "1", "2"], yticks=r.inputs, vmin=0, vmax=1)
        ax.set_title(tr("mh.head", h=head.head, kind=tr(f"mh.kind.{head.kind}")), fontsize=10)
        ax.set(xlabel="key", ylabel="x₀ x₁ x₂")
    if r.runs:
        ax = fig.add_subplot(grid[1, 2])
        ax.bar(
            [str(run.n_heads) for run in r.runs], [run.solved for run in r.runs], color=[BLUE, RED, RED][: len(r.runs)]
        )
        ax.set_ylim(0, len(r.seeds))
        ax.set(xlabel=tr("mh.heads_axis"), ylabel=tr("mh.solved_axis", n=len(r.seeds)))
    fig.suptitle(tr("mh.title"), fontsize=13)
    fig.tight_layout()

"""The figure of `attnlab explain permutation` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, RED, Labels, heat


def plot(r, fig, tr: Labels) -> None:
    axes = fig.subplots(2, 2)
    cases = ((r.without_positions, "perm.without"), (r.with_positions, "perm.with"))
    for row, (case, key) in enumerate(cases):
        for col, (weights, tokens, which) in enumerate(
            ((case.weights, r.tokens, "perm.original"), (case.weights_shuffled, r.shuffled, "perm.shuffled"))
        ):
            ax = axes[row, col]
            heat(ax, weights, xticks=tokens, yticks=tokens, vmin=0, vmax=1, annotate=True)
            ax.set_title(f"{tr(key)} · {tr(which)} {''.join(tokens)}", fontsize=10)
            ax.set(xlabel="key", ylabel="query")
        axes[row, 1].text(
            1.04,
            0.5,
            tr("perm.diff", diff=case.max_diff),
            transform=axes[row, 1].transAxes,
            rotation=90,
            va="center",
            fontsize=9,
            color=RED if case.with_positions else BLUE,
        )
    fig.suptitle(tr("perm.title"), fontsize=13)
    fig.tight_layout()

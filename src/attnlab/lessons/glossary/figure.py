"""The figure of `attnlab explain glossary` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import GREY, INK, RED, Labels


def plot(r, fig, tr: Labels) -> None:
    ax = fig.add_subplot(1, 1, 1)
    ax.axis("off")
    n = len(r.stages)
    for i, stage in enumerate(r.stages):
        x = i / n + 0.5 / n
        ax.text(
            x,
            0.62,
            tr(f"gl.{stage.stage}"),
            ha="center",
            va="center",
            fontsize=12,
            bbox=dict(
                boxstyle="round,pad=0.6", fc="#fdf2f0" if stage.stage in ("embedding", "block") else "white", ec=RED
            ),
        )
        ax.text(x, 0.45, "(" + ", ".join(map(str, stage.shape)) + ")", ha="center", fontsize=9, color=INK)
        ax.text(
            x,
            0.36,
            stage.example if len(stage.example) < 26 else stage.example[:24] + "…",
            ha="center",
            fontsize=7,
            color=GREY,
        )
        if i < n - 1:
            ax.annotate("", (x + 1 / n - 0.065, 0.62), (x + 0.065, 0.62), arrowprops=dict(arrowstyle="->", color=INK))
    ax.set_ylim(0.28, 0.72)
    ax.set_title(tr("gl.title", text=r.params["text"]), fontsize=13)
    fig.set_size_inches(15, 2.6)

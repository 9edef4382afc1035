"""The figure of `attnlab explain position-wise` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import INK, RED, Labels, heat


def plot(r, fig, tr: Labels) -> None:
    axes = fig.subplots(1, len(r.layers))
    for ax, layer in zip(axes, r.layers):
        heat(ax, layer.block_norms, cmap="Purples", vmin=0, annotate=True, fmt="{:.2g}")
        ax.set_title(
            f"{tr('pw.' + layer.layer)}\n{tr('pw.off', v=layer.off_diagonal_max)}",
            fontsize=10,
            color=RED if layer.mixes_positions else INK,
        )
        ax.set(xlabel="j (x_j)", ylabel="i (y_i)")
    title = tr("pw.title") + ("  ·  " + tr("pw.bug") if r.params["bug"] else "")
    fig.suptitle(title, fontsize=13)
    fig.set_size_inches(15, 4.2)
    fig.tight_layout()

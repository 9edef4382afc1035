"""The figure of `attnlab explain seq2seq` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it computes nothing."""

from __future__ import annotations

from attnlab.i18n import t
from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels, heat

SEQ2SEQ_COLORS = {"no_attention": GREY, "bahdanau": BLUE, "transformer": RED, "decoder_only": INK}


def _aligned_heat(ax, weights, ex, title: str, tr: Labels) -> None:
    """One attention map (target × source) with the true alignment boxed."""
    from matplotlib.patches import Rectangle

    heat(ax, weights, xticks=ex.source_tokens, yticks=ex.target_tokens, vmin=0, vmax=1)
    for i, j in enumerate(ex.truth):
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec=RED, lw=2))
    ax.set(title=title, xlabel=tr("seq2seq.src"), ylabel=tr("seq2seq.tgt"))


def plot(r, fig, tr: Labels) -> None:
    n_maps = 1 + len(r.heads)
    grid = fig.add_gridspec(2, max(2, n_maps))
    ax = fig.add_subplot(grid[0, :])
    ax.axvspan(r.train_lengths[-1] + 0.5, r.lengths[-1] + 0.5, color="#eeeeee", zorder=0)
    for kind, acc in r.accuracy.items():
        ax.plot(
            r.lengths,
            acc,
            "s--" if kind == "decoder_only" else "o-",
            color=SEQ2SEQ_COLORS.get(kind, INK),
            lw=2,
            label=t(f"explain.seq2seq.model.{kind}", tr.lang),
        )
    ax.set(
        xlabel=tr("seq2seq.length"),
        ylabel=tr("seq2seq.acc"),
        title=tr("seq2seq.accuracy"),
        ylim=(-0.03, 1.03),
        xticks=r.lengths,
    )
    ax.legend(fontsize=9)
    ex = r.example
    _aligned_heat(
        fig.add_subplot(grid[1, 0]), ex.bahdanau, ex, tr("seq2seq.alpha", score=ex.alignment_score["bahdanau"]), tr
    )
    for k, h in enumerate(r.heads):
        _aligned_heat(
            fig.add_subplot(grid[1, 1 + k]),
            h.weights,
            ex,
            tr("seq2seq.head", layer=h.layer, head=h.head, score=h.alignment_score),
            tr,
        )
    fig.tight_layout()

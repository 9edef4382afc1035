"""The figure of `attnlab explain context-vectors` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, RED, Labels


def plot(r, fig, tr: Labels) -> None:
    ax1, ax2 = fig.subplots(1, 2)
    layers = [x.layer for x in r.layers]
    for ax, key, gpt, enc in ((ax1, "l2", "causal_l2", "encoder_l2"), (ax2, "cos", "causal_cos", "encoder_cos")):
        ax.plot(layers, [getattr(x, gpt) for x in r.layers], "o-", color=BLUE, lw=2, label=tr("ctx.gpt"))
        ax.plot(layers, [getattr(x, enc) for x in r.layers], "s--", color=RED, lw=2, label=tr("ctx.encoder"))
        ax.set(xlabel=tr("ctx.layer"), ylabel=tr(f"ctx.{key}"))
        ax.set_xticks(layers)
        ax.legend(fontsize=9)
    fig.suptitle(tr("ctx.title", word=r.word, a="".join(r.tokens_a), b="".join(r.tokens_b)), fontsize=12)
    fig.tight_layout()

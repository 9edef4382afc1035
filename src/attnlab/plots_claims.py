"""Figures of the topics that check the course texts' missing claims (norms, context-vectors, one-hot).
Same conventions as attnlab.plots (which re-exports these as plots.plot_<slug>)."""

from __future__ import annotations

import numpy as np

from attnlab.plots import BLUE, GREY, INK, RED, Labels, _heat


# ------------------------------------------------------------------------------------------------- norms
def plot_norms(r, fig, tr: Labels) -> None:
    ax1, ax2 = fig.subplots(1, 2, sharey=True)
    k = np.arange(len(r.sample))
    for ax, series in ((ax1, (("ln_alone", "o", INK, 9), ("ln_in_a", "x", BLUE, 7), ("ln_in_b", "+", RED, 9))),
                       (ax2, (("bn_in_a", "x", BLUE, 7), ("bn_in_b", "+", RED, 9), ("bn_eval_a", "s", GREY, 4),
                              ("bn_eval_b", "d", INK, 3)))):
        ax.plot(k, r.sample, "-", color=GREY, lw=0.8, label="x")
        for name, marker, color, size in series:
            ax.plot(k, getattr(r, name), marker, color=color, ms=size, ls="none", label=tr(f"norms.{name}"))
        ax.set(xlabel=tr("norms.feature"))
        ax.legend(fontsize=8)
    ax1.set(ylabel=tr("norms.output"), title=f"LayerNorm · max Δ = {r.ln_diff:.1e}")
    ax2.set(title=f"BatchNorm1d · max Δ = {r.bn_diff:.3f} (eval {r.bn_eval_diff:.1e})")
    fig.suptitle(tr("norms.title"), fontsize=13)
    fig.tight_layout()


# --------------------------------------------------------------------------------------- context-vectors
def plot_context_vectors(r, fig, tr: Labels) -> None:
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

"""The figure of `attnlab explain norms` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it computes nothing."""

from __future__ import annotations

import numpy as np

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels


def plot(r, fig, tr: Labels) -> None:
    ax1, ax2 = fig.subplots(1, 2, sharey=True)
    k = np.arange(len(r.sample))
    for ax, series in (
        (ax1, (("ln_alone", "o", INK, 9), ("ln_in_a", "x", BLUE, 7), ("ln_in_b", "+", RED, 9))),
        (
            ax2,
            (
                ("bn_in_a", "x", BLUE, 7),
                ("bn_in_b", "+", RED, 9),
                ("bn_eval_a", "s", GREY, 4),
                ("bn_eval_b", "d", INK, 3),
            ),
        ),
    ):
        ax.plot(k, r.sample, "-", color=GREY, lw=0.8, label="x")
        for name, marker, color, size in series:
            ax.plot(k, getattr(r, name), marker, color=color, ms=size, ls="none", label=tr(f"norms.{name}"))
        ax.set(xlabel=tr("norms.feature"))
        ax.legend(fontsize=8)
    ax1.set(ylabel=tr("norms.output"), title=f"LayerNorm · max Δ = {r.ln_diff:.1e}")
    ax2.set(title=f"BatchNorm1d · max Δ = {r.bn_diff:.3f} (eval {r.bn_eval_diff:.1e})")
    fig.suptitle(tr("norms.title"), fontsize=13)
    fig.tight_layout()

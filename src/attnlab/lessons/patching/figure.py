"""The figure of `attnlab explain patching` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers;
it computes nothing (ρ is the lesson's, printed as it came)."""

from __future__ import annotations

import numpy as np

from attnlab.lessons.common.figure import BLUE, INK, RED, Labels, heat


def rho(x) -> str:
    return "—" if x is None else f"{x:.2f}"


def plot(r, fig, tr: Labels) -> None:
    axes = fig.subplots(2, 3)
    x = r.trained
    layers = [str(i + 1) for i in range(len(x.drop_zero))]
    heads = [str(h + 1) for h in range(len(x.drop_zero[0]))]
    top = max(abs(v) for how in ("zero", "mean", "resample") for row in getattr(x, "drop_" + how) for v in row) or 1.0
    for ax, how in zip(axes[0], ("zero", "mean", "resample")):
        heat(
            ax,
            getattr(x, "drop_" + how),
            xticks=heads,
            yticks=layers,
            cmap="RdBu_r",
            vmin=-top,
            vmax=top,
            annotate=True,
        )
        ax.set(title=tr(f"patching.{how}"), xlabel=tr("patching.head"), ylabel=tr("patching.layer"))

    ax = axes[1, 0]
    if x.restore_resid is None:
        ax.text(0.5, 0.5, tr("patching.no_gap"), ha="center", va="center", color=INK)
        ax.set_axis_off()
    else:
        heat(
            ax, x.restore_resid, xticks=r.positions, yticks=r.resid_rows, cmap="RdBu_r", vmin=-1, vmax=1, annotate=True
        )
        ax.set(title=tr("patching.resid"), xlabel=tr("patching.position"))

    by = {c.name: c for c in r.correlations}
    pairs = np.asarray(r.head_pairs, dtype=float).reshape(-1, 2)
    ax = axes[1, 1]
    ax.scatter(pairs[:, 0], pairs[:, 1], s=8, color=BLUE, alpha=0.5)
    ax.set(
        xlabel=tr("patching.weight"),
        ylabel=tr("patching.effect"),
        title=tr("patching.heads_rho", rho=rho(by["head_weight"].rho)),
    )
    ax.set_yscale("symlog", linthresh=1e-2)

    tokens = np.asarray(r.token_pairs, dtype=float).reshape(-1, 3)
    ax = axes[1, 2]
    ax.scatter(tokens[:, 0], tokens[:, 2], s=12, color=INK, alpha=0.6, label=tr("patching.attention"))
    ax.scatter(tokens[:, 1], tokens[:, 2], s=12, color=RED, alpha=0.6, marker="^", label=tr("patching.rollout"))
    ax.set(
        xlabel=tr("patching.reading"),
        ylabel=tr("patching.effect"),
        title=tr("patching.tokens_rho", a=rho(by["token_attention"].rho), r=rho(by["token_rollout"].rho)),
    )
    ax.legend(fontsize=7)
    fig.suptitle(tr("patching.title"), fontsize=13)
    fig.tight_layout()

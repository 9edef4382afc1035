"""The figure of `attnlab explain sqrt-dk` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it computes nothing."""

from __future__ import annotations

import numpy as np

from attnlab.lessons.common.figure import BLUE, GREY, RED, Labels


def plot(r, fig, tr: Labels) -> None:
    axes = fig.subplots(2, 2)
    dk = [s.d_k for s in r.sweep]
    ax = axes[0, 0]
    ax.loglog(dk, dk, color=GREY, lw=1, ls="--", label=tr("sqrt.var_line"))
    ax.loglog(dk, [s.var for s in r.sweep], "o", color=RED, label=tr("sqrt.var_measured"))
    ax.loglog(dk, [s.scaled_var for s in r.sweep], "s", color=BLUE, label=tr("sqrt.var_scaled"))
    ax.set_xscale("log", base=2)
    ax.set(xlabel="d_k", ylabel="Var", title=tr("sqrt.var_title", n=r.params["n_samples"]))
    ax.legend(fontsize=8)

    ax = axes[0, 1]
    ax.semilogx(
        [s.d_k for s in r.softmax_sweep],
        [s.max_weight_unscaled for s in r.softmax_sweep],
        "o-",
        color=RED,
        label=tr("sqrt.unscaled"),
        base=2,
    )
    ax.semilogx(
        [s.d_k for s in r.softmax_sweep],
        [s.max_weight_scaled for s in r.softmax_sweep],
        "s-",
        color=BLUE,
        label=tr("sqrt.scaled"),
        base=2,
    )
    ax.axhline(1.0 / r.params["n_keys"], color=GREY, lw=1, ls=":", label=tr("sqrt.uniform"))
    ax.set(xlabel="d_k", ylabel=tr("sqrt.max_weight"), title=tr("sqrt.max_title", n=r.params["n_keys"]), ylim=(0, 1.02))
    ax.legend(fontsize=8)

    ax = axes[1, 0]
    ax.semilogx(
        [s.d_k for s in r.softmax_sweep],
        [s.grad_norm_unscaled for s in r.softmax_sweep],
        "o-",
        color=RED,
        label=tr("sqrt.unscaled"),
        base=2,
    )
    ax.semilogx(
        [s.d_k for s in r.softmax_sweep],
        [s.grad_norm_scaled for s in r.softmax_sweep],
        "s-",
        color=BLUE,
        label=tr("sqrt.scaled"),
        base=2,
    )
    ax.set(xlabel="d_k", ylabel="‖∂p/∂s‖_F", title=tr("sqrt.grad_title"))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)

    ax = axes[1, 1]
    x = np.arange(len(r.example_scores))
    ax.bar(x - 0.2, r.example_unscaled, width=0.4, color=RED, label=tr("sqrt.unscaled"))
    ax.bar(x + 0.2, r.example_scaled, width=0.4, color=BLUE, label=tr("sqrt.scaled"))
    ax.set(
        xlabel=tr("sqrt.key_index"),
        ylabel=tr("sqrt.weight"),
        title=tr("sqrt.row_title", d_k=r.params["d_k"]),
        ylim=(0, 1.02),
    )
    ax.legend(fontsize=8)
    fig.suptitle(tr("sqrt.title"), fontsize=13)
    fig.tight_layout()

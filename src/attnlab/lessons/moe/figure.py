"""The figure of `attnlab explain moe` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it
computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels

COLORS = {"moe": BLUE, "moe_free": RED, "dense_active": GREY, "dense_total": INK}


def plot(r, fig, tr: Labels) -> None:
    ax1, ax2, ax3 = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1, 2, 1]})
    names = [run.name for run in r.runs]
    ax1.bar(range(len(names)), [run.loss for run in r.runs], color=[COLORS[n] for n in names])
    ax1.set_xticks(range(len(names)), [tr(f"moe.{n}") for n in names], rotation=30, ha="right", fontsize=7)
    for i, run in enumerate(r.runs):
        ax1.text(i, run.loss, f"{run.loss:.3f}", ha="center", va="bottom", fontsize=7)
    ax1.set(ylabel=tr("moe.loss"))

    moes = [run for run in r.runs if run.routing is not None]
    width = 0.8 / len(moes)
    ticks = []
    for j, run in enumerate(moes):
        shares = [s for layer in run.routing.share for s in layer]
        xs = [i + j * width for i in range(len(shares))]
        ax2.bar(xs, shares, width=width, color=COLORS[run.name], label=tr(f"moe.{run.name}"))
        ticks = [f"{li + 1}·{e + 1}" for li, layer in enumerate(run.routing.share) for e in range(len(layer))]
    ax2.axhline(r.even_share, ls="--", color=INK, lw=0.8, label=tr("moe.even"))
    ax2.axhline(r.dead_below, ls=":", color=RED, lw=0.8)
    ax2.set_xticks([i + width * (len(moes) - 1) / 2 for i in range(len(ticks))], ticks, fontsize=7)
    ax2.set(xlabel=tr("moe.expert"), ylabel=tr("moe.share"))
    ax2.legend(fontsize=7)

    for run in r.runs:
        ax3.plot([0, 1], [run.loss_first, run.loss_last], "o-", color=COLORS[run.name], ms=3)
    ax3.set_xticks([0, 1], ["1", str(r.params["train_steps"])])
    ax3.set(title=tr("moe.train"))
    fig.suptitle(tr("moe.title"), fontsize=13)
    fig.tight_layout()

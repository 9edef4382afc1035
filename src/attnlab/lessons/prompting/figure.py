"""The figure of `attnlab explain prompting` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers;
it computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels

STYLE = {  # model -> (colour, line)
    "two_layer": (BLUE, "-o"),
    "deranged": (RED, "-s"),
    "one_layer": (INK, "-^"),
    "ablated": (GREY, "-v"),
}


def plot(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(1, 2, width_ratios=[2.2, 1])
    ax1, ax2 = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    for name, (colour, line) in STYLE.items():
        ax1.plot(r.shots, r.accuracy[name], line, color=colour, lw=1.6, ms=4, label=tr(f"prompting.{name}"))
    ax1.plot(r.shots, r.accuracy["ceiling"], "--", color=INK, lw=1.0, label=tr("prompting.ceiling"))
    ax1.axhline(r.chance, color=GREY, lw=0.9, ls=":", label=tr("prompting.chance"))
    ax1.set_xlabel(tr("prompting.shots"))
    ax1.set_ylabel(tr("prompting.acc"))
    ax1.set_ylim(0, 1.02)
    ax1.set_xticks(r.shots)
    ax1.set_title(tr("prompting.title"))
    ax1.legend(fontsize=8, loc="upper left")
    heads = [f"H{h + 1}" for h in range(len(r.label_attention))]
    colours = [GREY if h + 1 in r.heads else BLUE for h in range(len(heads))]  # grey: zeroed, as the ablated line
    ax2.bar(heads, r.label_attention, color=colours)
    ax2.set_ylim(0, 1.02)
    ax2.set_xlabel(tr("prompting.heads"))
    ax2.set_ylabel(tr("prompting.attention"))

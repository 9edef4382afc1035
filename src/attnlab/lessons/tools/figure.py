"""The figure of `attnlab explain tools` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers;
it computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels

STYLE = {"tool": (BLUE, "-o"), "no_exec": (RED, "-s"), "control": (INK, "-^")}  # condition -> (colour, line)


def plot(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(1, 2, width_ratios=[2.2, 1])
    ax1, ax2 = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    for name, (colour, line) in STYLE.items():
        ax1.plot(r.lengths, r.accuracy[name], line, color=colour, lw=1.6, ms=5, label=tr(f"tools.{name}"))
    ax1.axvline(r.trained_digits + 0.5, color=GREY, lw=0.9, ls="--")  # right of it: longer than any trained
    ax1.set_xticks(r.lengths)
    ax1.set_xlabel(tr("tools.digits"))
    ax1.set_ylabel(tr("tools.acc"))
    ax1.set_ylim(0, 1.02)
    ax1.set_title(tr("tools.title"))
    ax1.legend(fontsize=8, loc="center left")
    width = 0.38
    xs = range(len(r.lengths))
    ax2.bar([x - width / 2 for x in xs], r.well_formed, width, color=GREY, label=tr("tools.well_formed"))
    ax2.bar([x + width / 2 for x in xs], r.copied, width, color=BLUE, label=tr("tools.copied"))
    ax2.set_xticks(list(xs), [str(d) for d in r.lengths])
    ax2.set_ylim(0, 1.02)
    ax2.set_xlabel(tr("tools.digits"))
    ax2.set_ylabel(tr("tools.share"))
    ax2.set_title(tr("tools.calls"))
    ax2.legend(fontsize=8, loc="lower left")

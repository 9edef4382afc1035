"""The figure of `attnlab explain agent` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers;
it computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels

STYLE = {"agent": (BLUE, "-o"), "no_exec": (RED, "-s"), "single_shot": (INK, "-^")}  # condition -> (colour, line)


def plot(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(1, 2, width_ratios=[2.2, 1])
    ax1, ax2 = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    for name, (colour, line) in STYLE.items():
        ax1.plot(r.steps_needed, r.success[name], line, color=colour, lw=1.6, ms=5, label=tr(f"agent.{name}"))
    ax1.axvline(r.trained_steps + 0.5, color=GREY, lw=0.9, ls="--")  # right of it: longer than any trained
    ax1.set_xticks(r.steps_needed)
    ax1.set_xlabel(tr("agent.steps"))
    ax1.set_ylabel(tr("agent.acc"))
    ax1.set_ylim(0, 1.02)
    ax1.set_title(tr("agent.title"))
    ax1.legend(fontsize=8, loc="center left")
    ax2.plot(r.steps_needed, r.steps_needed, "--", color=GREY, lw=1.0, label=tr("agent.needed"))
    ax2.plot(r.steps_needed, r.calls, "-o", color=BLUE, lw=1.6, ms=5, label=tr("agent.made"))
    ax2.set_xticks(r.steps_needed)
    ax2.set_yticks(range(0, max(r.steps_needed) + 2))
    ax2.set_xlabel(tr("agent.steps"))
    ax2.set_ylabel(tr("agent.made"))
    ax2.set_title(tr("agent.calls"))
    ax2.legend(fontsize=8, loc="upper left")

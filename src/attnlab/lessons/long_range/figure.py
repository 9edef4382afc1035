"""The figure of `attnlab explain long-range` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers;
it computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels, seed_curves

STYLE = {"transformer": (RED, "o"), "lstm": (BLUE, "s"), "gru": (INK, "^")}  # model -> (colour, marker)


def plot(r, fig, tr: Labels) -> None:
    ax = fig.add_subplot(1, 1, 1)
    for name, (colour, marker) in STYLE.items():
        seed_curves(ax, r.distances, r.per_seed[name], r.accuracy[name], colour, marker, tr(f"long_range.{name}"))
    ax.axhline(1 / 8, color=GREY, lw=0.9, ls="--", label=tr("long_range.chance"))
    ax.set_xscale("log", base=2)
    ax.set_xticks(r.distances, [str(d) for d in r.distances])
    ax.set_xlabel(tr("long_range.distance"))
    ax.set_ylabel(tr("long_range.acc"))
    ax.set_ylim(0, 1.02)
    ax.set_title(tr("long_range.title"))
    ax.legend(fontsize=8, loc="center left")

"""The figure of `attnlab explain break`, in two panels stacked so that it stays legible on a phone (390 px):
above, the intact and the ablated model's loss curves on a log loss axis (every seed a thin line, the mean a thick
one; train loss solid, causal loss dashed), because the effect lives near the end of training, where a linear axis
from 0 to the untrained loss squeezes the small final losses into a few pixels; below, the final losses as bars
with their values written beside them (the lesson's table: mean ± sd over seeds). Same conventions as
attnlab.lessons.common.figure: it draws the lesson's numbers and computes none."""

from __future__ import annotations

from attnlab.display.fmt import num
from attnlab.lessons.common.figure import BLUE, RED, Labels

CURVES = (
    ("intact", "train", BLUE, "-"),
    ("intact", "causal", BLUE, "--"),
    ("ablated", "train", RED, "-"),
    ("ablated", "causal", RED, "--"),
)
SIZE = (7.5, 9.0)  # inches: about 825 px wide as a PNG, so a phone shrinks it by half, not by three quarters
FONT = 13


def plot(r, fig, tr: Labels) -> None:
    fig.set_size_inches(*SIZE)
    top, bottom = fig.subplots(2, 1, gridspec_kw={"height_ratios": (3, 2)})
    _curves(r, top, tr)
    _finals(r, bottom, tr)
    fig.suptitle(tr("break.title", ablation=r.ablation, n=len(r.seeds), corpus=r.corpus), fontsize=FONT + 1)
    fig.tight_layout()


def _curves(r, ax, tr: Labels) -> None:
    for model, kind, color, style in CURVES:
        rs = [x for x in r.runs if x.model == model]
        series = [getattr(x, f"{kind}_loss") for x in rs]
        for s in series:
            ax.plot(r.steps_at, s, style, color=color, lw=0.7, alpha=0.35)
        mean = [sum(col) / len(col) for col in zip(*series)]  # the mean the lesson's chart draws (lesson._chart)
        ax.plot(r.steps_at, mean, style, color=color, lw=2.4, label=tr(f"break.{model}_{kind}"))
    ax.set_yscale("log")  # a loss that falls by orders of magnitude: the ending is the finding
    ax.set_xlabel(tr("break.step"), fontsize=FONT)
    ax.set_ylabel(tr("break.loss_log"), fontsize=FONT)
    ax.tick_params(labelsize=FONT - 2)
    ax.grid(True, which="major", axis="y", color="#dddddd", lw=0.6)
    ax.legend(fontsize=FONT - 3, loc="best")


def _finals(r, ax, tr: Labels) -> None:
    """One bar per curve: the lesson's final mean, its value and sd written at the bar's end (honest rounding:
    an sd of 0.0003 reads 3e−4, not 0)."""
    rows = {row.model: row for row in r.table}
    bars = []
    for model, kind, color, _ in CURVES:
        row = rows[model]
        bars.append(
            (
                tr(f"break.{model}_{kind}"),
                getattr(row, f"{kind}_mean"),
                getattr(row, f"{kind}_std"),
                color,
                kind == "causal",
            )
        )
    ys = list(range(len(bars)))[::-1]  # the first curve on top, as in the legend
    for y, (label, mean, sd, color, hatched) in zip(ys, bars):
        ax.barh(
            y,
            mean,
            color=color,
            alpha=0.85,
            hatch="//" if hatched else None,
            edgecolor="white",
            label=label,
            gid="final",
        )
        ax.text(mean, y, f"  {num(mean)} ± {num(sd)}", va="center", ha="left", fontsize=FONT - 1)
    ax.set_yticks(ys, [b[0] for b in bars], fontsize=FONT - 2)
    ax.set_xlim(0, max(b[1] for b in bars) * 1.55)  # room for the values written after the longest bar
    ax.set_xlabel(tr("break.final", n=len(r.seeds)), fontsize=FONT)
    ax.tick_params(axis="x", labelsize=FONT - 2)

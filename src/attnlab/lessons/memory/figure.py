"""The figure of `attnlab explain memory` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it
computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels

PARTS = ("weights", "gradients", "master_weights", "adam_m", "adam_v")
COLORS = (BLUE, RED, INK, GREY, "#b0b0b0")


def plot(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(2, 2)
    ax = fig.add_subplot(grid[0, 0])
    precisions = list(r.per_param_bytes)
    for j, prec in enumerate(precisions):
        bottom = 0
        for part, color in zip(PARTS, COLORS):
            n = r.per_param_bytes[prec].get(part, 0)
            if n:
                ax.bar(j, n, bottom=bottom, color=color, edgecolor="white", label=None)
                ax.text(
                    j,
                    bottom + n / 2,
                    f"{tr('memory.pp.' + part)} {n}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white",
                )
                bottom += n
    ax.set_xticks(range(len(precisions)), precisions)
    ax.set(ylabel=tr("memory.bytes"), title=tr("memory.per_param"))

    ax = fig.add_subplot(grid[0, 1])
    parts = list(r.measured)
    ys = range(len(parts))
    ax.barh([y - 0.2 for y in ys], [r.measured[p] for p in parts], height=0.4, color=BLUE, label=tr("memory.measured"))
    ax.barh([y + 0.2 for y in ys], [r.formula[p] for p in parts], height=0.4, color=GREY, label=tr("memory.formula"))
    ax.set_yticks(list(ys), [tr("memory.part." + p) for p in parts], fontsize=7)
    ax.invert_yaxis()
    ax.set(xlabel=tr("memory.bytes"), title=tr("memory.lab"))
    ax.legend(fontsize=7)

    ax = fig.add_subplot(grid[1, 0])
    rows = r.published
    ys = range(len(rows))
    ax.barh([y - 0.2 for y in ys], [e.gb["weights"] for e in rows], height=0.4, color=BLUE, label=tr("memory.weights"))
    ax.barh([y + 0.2 for y in ys], [e.gb["kv_cache"] for e in rows], height=0.4, color=RED, label=tr("memory.kv"))
    for gb in r.cards_gb:
        ax.axvline(gb, color=INK, lw=0.8, ls="--")
        ax.text(gb, -0.6, tr("memory.card", gb=gb), fontsize=7, ha="center", va="bottom")
    ax.set_xscale("log")
    ax.set_yticks(list(ys), [e.name for e in rows], fontsize=7)
    ax.invert_yaxis()
    p = r.params
    ax.set(xlabel=tr("memory.gb"), title=tr("memory.inference", ctx=p["context"], dtype=p["dtype"], batch=p["batch"]))
    ax.legend(fontsize=7, loc="upper right")

    ax = fig.add_subplot(grid[1, 1])
    f, e = r.filling, r.chosen
    ax.plot(f["sequences"], f["gb"], color=RED, label=tr("memory.with_weights"))
    ax.plot(f["sequences"], f["gb_mha"], color=GREY, ls=":", label=tr("memory.mha"))
    for gb in r.cards_gb:
        ax.axhline(gb, color=INK, lw=0.8, ls="--")
        ax.text(0, gb, tr("memory.card", gb=gb) + f" · {e.fits[str(gb)]}", fontsize=7, va="bottom")
    ax.set(
        xlabel=tr("memory.sequences"),
        ylabel="GB",
        title=tr("memory.kv_growth", name=e.name, ctx=e.context, dtype=e.dtype),
    )
    ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(tr("memory.title"), fontsize=13)
    fig.tight_layout()

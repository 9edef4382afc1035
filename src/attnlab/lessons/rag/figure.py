"""The figure of `attnlab explain rag` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it
computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels, heat

COLOURS = {"alone": GREY, "retrieved": RED, "random": BLUE, "oracle": INK}


def plot(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(2, 2, width_ratios=[1.3, 1], height_ratios=[1, 1])
    bars, curves, att = fig.add_subplot(grid[:, 0]), fig.add_subplot(grid[0, 1]), fig.add_subplot(grid[1, 1])
    for i, c in enumerate(r.conditions):
        bars.bar(i, r.recall[c], 0.7, color=COLOURS[c])
        bars.plot([i] * len(r.recall_by_seed[c]), r.recall_by_seed[c], "o", color="white", mec=INK, ms=4)
    bars.set_xticks(range(len(r.conditions)), [tr(f"rag.{c}") for c in r.conditions], fontsize=8)
    bars.set_ylim(0, 1.02)
    bars.set_ylabel(tr("rag.recall"))
    bars.set_title(tr("rag.title"))
    for name, colour, style in (("bm25", RED, "o-"), ("dense", BLUE, "o-"), ("dense_untrained", BLUE, "o:")):
        curves.plot(r.ks, r.retrieval_recall[name], style, color=colour, label=tr(f"rag.{name}"))
    curves.plot(r.ks, [k / r.n_poems for k in r.ks], "--", color=GREY, lw=1, label=tr("rag.chance"))
    curves.set(xticks=r.ks, ylim=(0, 1.02), xlabel="k", ylabel=tr("rag.recall_at"))
    curves.legend(fontsize=7)
    ex = r.example
    heat(att, ex.attention, xticks=ex.context, yticks=list(ex.written["retrieved"]), vmin=0)
    att.set_title(tr("rag.attention"), fontsize=9)
    fig.tight_layout()

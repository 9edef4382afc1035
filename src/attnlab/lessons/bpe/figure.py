"""The figure of `attnlab explain bpe` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it
computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, GREY, RED, Labels


def plot(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(1, 2, width_ratios=[2.2, 1])
    ax1, ax2 = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    for lang, colour in (("zh", RED), ("en", BLUE)):
        ax1.plot(r.sizes, r.tokens_per_char[lang], "-o", color=colour, lw=1.6, ms=4, label=tr(f"bpe.{lang}"))
        ax1.plot(
            r.sizes,
            r.tokens_per_char[lang + "_shuffled"],
            "--",
            color=colour,
            lw=1.0,
            label=f"{tr(f'bpe.{lang}')} · {tr('bpe.shuffled')}",
        )
        ax1.axhline(r.bytes_per_char[lang], color=colour, lw=0.8, ls=":")
    ax1.plot([], [], ":", color=GREY, label=tr("bpe.bytes"))
    ax1.set_xscale("log", base=2)
    ax1.set_xticks(r.sizes, [str(v) for v in r.sizes])
    ax1.set_xlabel(tr("bpe.vocab"))
    ax1.set_ylabel(tr("bpe.tpc"))
    ax1.set_ylim(0, max(r.bytes_per_char.values()) * 1.1)
    ax1.set_title(tr("bpe.title"))
    ax1.legend(fontsize=8, loc="upper right")
    xs = range(len(r.sizes))
    width = 0.38
    ax2.bar([x - width / 2 for x in xs], r.multi_han["text"], width, color=RED, label=tr("bpe.text"))
    ax2.bar([x + width / 2 for x in xs], r.multi_han["shuffled"], width, color=GREY, label=tr("bpe.shuffled"))
    ax2.set_xticks(list(xs), [str(v) for v in r.sizes])
    ax2.set_xlabel(tr("bpe.vocab"))
    ax2.set_ylabel(tr("bpe.multi"))
    ax2.legend(fontsize=8, loc="upper left")

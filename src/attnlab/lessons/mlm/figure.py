"""The figure of `attnlab explain mlm` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it computes nothing."""

from __future__ import annotations

import numpy as np

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels


def plot(r, fig, tr: Labels) -> None:
    from attnlab.i18n import t

    ax1, ax2, ax3 = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.2, 1.2, 2]})
    kinds = ("bidirectional", "causal", "causal_fill", "baseline")
    colors = (RED, BLUE, "#8e44ad", GREY)
    acc = [r.accuracy[k] or 0.0 for k in kinds]
    bars = ax1.bar(range(4), acc, color=colors)
    for bar, k in zip(bars, kinds):
        ax1.annotate(
            f"{r.correct[k]}/{r.n_masked}",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize=8,
            color=INK,
        )
    ax1.set_xticks(range(4), [t(f"explain.mlm.model.{k}", tr.lang) for k in kinds], fontsize=6, rotation=25)
    ax1.set(ylabel=tr("mlm.acc"), ylim=(0, 1.1))
    for i, (k, color) in enumerate(zip(kinds[:3], colors[:3])):  # by verse: first and second, side by side
        vals = [r.by_verse[k][v] or 0.0 for v in ("first", "second")]
        ax2.bar(np.arange(2) + (i - 1) * 0.27, vals, 0.27, color=color, label=t(f"explain.mlm.model.{k}", tr.lang))
    if r.chance is not None:
        ax2.axhline(r.chance, color=GREY, ls="--", lw=1, label=t("explain.mlm.chance", tr.lang))
    verses = [
        t(f"explain.mlm.verse.{v}", tr.lang).replace(" (", "\n(") for v in ("first", "second")
    ]  # side by side they ran together
    ax2.set_xticks(range(2), verses, fontsize=7)
    ax2.set(ylim=(0, 1.1), title=tr("mlm.verse"))
    # below the axes, not over them: in the plot's corner the legend covered the first verse's bars
    ax2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, frameon=False)
    ax3.axis("off")
    ax3.set_title(tr("mlm.example"), fontsize=10)
    guesses = [g for ex in r.examples for g in ex.guesses][:20]
    rows = (("char", INK), ("bidirectional", RED), ("causal", BLUE), ("causal_fill", "#8e44ad"))
    for i, (name, color) in enumerate(rows):
        label = t("explain.mlm.char", tr.lang) if name == "char" else t(f"explain.mlm.model.{name}", tr.lang)
        ax3.text(
            -0.02, 1 - (i + 1) * 0.12, label, ha="right", va="center", fontsize=8, color=color, transform=ax3.transAxes
        )
        for j, g in enumerate(guesses):
            ch = getattr(g, name)
            right = name != "char" and ch == g.char
            ax3.text(
                j / 20,
                1 - (i + 1) * 0.12,
                ch,
                ha="left",
                va="center",
                fontsize=11,
                transform=ax3.transAxes,
                color="#27ae60" if right else (INK if name == "char" else GREY),
                weight="bold" if right else "normal",
            )
    fig.suptitle(tr("mlm.title", corpus=r.corpus, n=r.n_masked), fontsize=12)
    fig.tight_layout()

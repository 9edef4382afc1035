"""The figure of `attnlab explain word2vec` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it
computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels

COLORS = (BLUE, RED, INK, GREY, "#27ae60", "#e67e22", "#8e44ad", "#16a085")


def plot(r, fig, tr: Labels) -> None:
    ax1, ax2, ax3 = fig.subplots(1, 3, gridspec_kw={"width_ratios": [3, 2, 2]})
    ax1.scatter([p.x for p in r.pca], [p.y for p in r.pca], s=8, color=GREY)
    for p in r.pca:
        ax1.annotate(p.char, (p.x, p.y), fontsize=9, ha="center", va="bottom")
    ax1.set(title=tr("word2vec.pca", share=r.pca_share))

    names = ("neighbours", "distributional", "gpt")
    trained = [r.neighbour_score, r.context_corr, r.gpt_corr]
    start = [r.neighbour_score_init, r.context_corr_init, r.gpt_corr_init]
    random = [r.neighbour_score_random, r.context_corr_random or 0.0, r.gpt_corr_random or 0.0]
    sds = [r.neighbour_score_random_sd, r.context_corr_random_sd, r.gpt_corr_random_sd]
    xs = range(len(names))
    ax2.bar([x - 0.27 for x in xs], [v or 0.0 for v in trained], 0.27, color=BLUE, label=tr("word2vec.trained"))
    ax2.bar(list(xs), [v or 0.0 for v in start], 0.27, color=GREY, label=tr("word2vec.start"))
    ax2.bar(
        [x + 0.27 for x in xs], random, 0.27, yerr=[s or 0.0 for s in sds], color="#dddddd", label=tr("word2vec.random")
    )
    ax2.axhline(r.neighbour_score_onehot, xmax=0.33, ls=":", color=RED, label=tr("word2vec.onehot"))
    ax2.set_xticks(list(xs), [tr(f"word2vec.{n}") for n in names], fontsize=8)
    ax2.set(title=tr("word2vec.measures"))
    ax2.legend(fontsize=7)

    for q, color in zip(r.queries, COLORS):
        ax3.scatter([n.context for n in q.neighbours], [n.cos for n in q.neighbours], color=color, label=q.char)
        for n in q.neighbours:
            ax3.annotate(n.char, (n.context, n.cos), fontsize=8, xytext=(3, 2), textcoords="offset points")
    ax3.set(xlabel=tr("word2vec.context"), ylabel=tr("word2vec.cos"), title=tr("word2vec.scatter"))
    ax3.legend(fontsize=8)
    fig.suptitle(tr("word2vec.title", corpus=r.corpus), fontsize=12)
    fig.tight_layout()

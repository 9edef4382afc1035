"""The figure of `attnlab explain encoder-uses` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers;
it computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels


def plot(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(1, 2, width_ratios=[1.6, 1])
    ax, tags = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    s = r.sentences
    groups = [  # (label, the encoder's per seed or one value, the baseline, chance)
        (tr("encoder_uses.classify"), r.accuracy["encoder"], r.accuracy["bag"], r.majority),
        (
            tr("encoder_uses.tag"),
            r.found["encoder"],
            r.found["frequency"],
            next(c for c in r.claims if c.id == "tags").values["chance"],
        ),
    ]
    if s.installed:
        n = len(s.sentences)
        groups.append((tr("encoder_uses.vectors"), [sum(s.hits) / n], sum(s.bag_hits) / n, s.chance))
    for i, (_label, encoder, baseline, chance) in enumerate(groups):
        mean = sum(encoder) / len(encoder)
        ax.bar(i - 0.2, mean, 0.38, color=RED, label=tr("encoder_uses.encoder") if i == 0 else None)
        ax.plot(
            [i - 0.2] * len(encoder), encoder, "o", color=INK, ms=3, label=tr("encoder_uses.seed") if i == 0 else None
        )
        ax.bar(i + 0.2, baseline, 0.38, color=BLUE, label=tr("encoder_uses.baseline") if i == 0 else None)
        ax.plot(
            [i - 0.42, i + 0.42],
            [chance, chance],
            "--",
            color=GREY,
            lw=1,
            label=tr("encoder_uses.chance") if i == 0 else None,
        )
    ax.set_xticks(range(len(groups)), [g[0] for g in groups], fontsize=8)
    ax.set_ylim(0, 1.02)
    ax.set_ylabel(tr("encoder_uses.share"))
    ax.set_title(tr("encoder_uses.title"))
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=4)
    c = r.couplet
    colours = [RED if i in c.wrong else GREY for i in range(len(c.chars))]
    tags.bar(range(len(c.chars)), c.p_wrong, color=colours)
    tags.set_xticks(range(len(c.chars)), c.chars)
    tags.set_ylim(0, 1.02)
    tags.set_title(tr("encoder_uses.couplet", p=c.p_spoilt), fontsize=9)
    tags.set_ylabel(tr("encoder_uses.p_wrong"))
    fig.tight_layout()

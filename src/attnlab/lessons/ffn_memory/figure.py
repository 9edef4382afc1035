"""The figure of `attnlab explain ffn-memory` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers;
it computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels


def plot(r, fig, tr: Labels) -> None:
    ax1, ax2, ax3 = fig.subplots(1, 3)
    kinds = ("shared", "readable")
    bars = {
        "trained": [r.trained.shared, r.trained.readable],
        "untrained": [r.untrained.shared, r.untrained.readable],
        "chance": [r.trained.alive * r.trained.shared_chance, r.trained.alive * r.trained.readable_chance],
    }
    for i, (name, color) in enumerate((("trained", BLUE), ("untrained", GREY), ("chance", INK))):
        xs = [k + (i - 1) * 0.27 for k in range(len(kinds))]
        ax1.bar(xs, bars[name], width=0.27, color=color, label=tr(f"ffn_memory.{name}"))
        for xv, v in zip(xs, bars[name]):
            ax1.text(xv, v, f"{v:.0f}" if name != "chance" else f"{v:.1f}", ha="center", va="bottom", fontsize=7)
    ax1.set_xticks(range(len(kinds)), [tr(f"ffn_memory.{k}") for k in kinds], fontsize=8)
    ax1.set(ylabel=tr("ffn_memory.count"))
    ax1.legend(fontsize=7)

    layers = [x.layer for x in r.layers]
    for ax, (a, b), title in ((ax2, ("hurt_fire", "hurt_quiet"), "one"), (ax3, ("hurt_top", "hurt_random"), "handful")):
        for i, (field, color, label) in enumerate(
            ((a, RED, "fire" if title == "one" else "top"), (b, GREY, "quiet" if title == "one" else "random"))
        ):
            xs = [layer + (i - 0.5) * 0.35 for layer in layers]
            ax.bar(xs, [getattr(x, field) for x in r.layers], width=0.35, color=color, label=tr(f"ffn_memory.{label}"))
        ax.axhline(0, color=INK, lw=0.6)
        ax.set_xticks(layers, [str(v) for v in layers])
        ax.set(xlabel=tr("ffn_memory.layer"), ylabel=tr("ffn_memory.drop"), title=tr(f"ffn_memory.{title}"))
        ax.legend(fontsize=7)
    fig.suptitle(tr("ffn_memory.title"), fontsize=13)
    fig.tight_layout()

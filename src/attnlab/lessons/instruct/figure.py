"""The figure of `attnlab explain instruct` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers;
it computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels

COLOUR = {"base": GREY, "shuffled": INK, "lora": RED, "sft": BLUE}


def plot(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(1, 2, width_ratios=[2.2, 1])
    ax1, ax2 = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    xs = range(len(r.models))
    ax1.bar(xs, [r.following[m] for m in r.models], 0.6, color=[COLOUR[m] for m in r.models])
    for x, m in zip(xs, r.models):  # each seed a dot
        ax1.plot([x] * len(r.following_by_seed[m]), r.following_by_seed[m], "o", color=INK, ms=4)
    ax1.set_xticks(list(xs), [tr(f"instruct.{m}") for m in r.models])
    ax1.set_ylim(0, 1.02)
    ax1.set_ylabel(tr("instruct.following"))
    ax1.set_title(tr("instruct.title"))
    ax2.bar([0, 1], [r.trainable["sft"], r.trainable["lora"]], 0.6, color=[BLUE, RED])
    ax2.set_yscale("log")
    ax2.set_ylim(bottom=1)  # the bars rise from one parameter
    ax2.set_xticks([0, 1], [tr("instruct.sft"), tr("instruct.lora")])
    ax2.set_ylabel(tr("instruct.trainable"))
    ax2.set_title(tr("instruct.params"))

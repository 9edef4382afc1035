"""The figure of `attnlab explain induction` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers;
it computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels

HEAD_COLORS = ("#2c6fbb", "#c0392b", "#27ae60", "#8e44ad")


def plot(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(2, 2, height_ratios=[1, 1.2])
    ax1, ax2 = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    ax3, ax4 = fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1])
    steps = r.steps
    n_layers = len(r.prefix_matching[0])
    for li in range(n_layers):
        for h in range(len(r.prefix_matching[0][li])):
            ax1.plot(
                steps,
                [s[li][h] for s in r.prefix_matching],
                "-",
                lw=1.4,
                color=HEAD_COLORS[(li * 2 + h) % len(HEAD_COLORS)],
                label=f"{tr('induction.two')} L{li + 1}H{h + 1}",
            )
    for h in range(len(r.one_layer.prefix_matching[0][0])):
        ax1.plot(
            steps,
            [s[0][h] for s in r.one_layer.prefix_matching],
            "--",
            lw=1.2,
            color=GREY if h else INK,
            label=f"{tr('induction.one')} H{h + 1}",
        )
    ax1.axhline(r.threshold, color=RED, lw=0.8, ls=":")
    ax1.axhline(r.chance_prefix, color=GREY, lw=0.8, ls=":", label=tr("induction.chance"))
    phase = r.phase_step.get("two_layer")
    for ax in (ax1, ax2):
        if phase is not None:
            ax.axvline(phase, color=RED, lw=0.8, alpha=0.6)
    ax1.set(xlabel=tr("induction.step"), ylabel=tr("induction.pm"), ylim=(0, 1.02))
    ax1.legend(fontsize=6, ncol=2)

    ax2.plot(steps, r.icl_score, "-", color=BLUE, label=f"ICL · {tr('induction.two')}")
    ax2.plot(steps, r.one_layer.icl_score, "--", color=INK, label=f"ICL · {tr('induction.one')}")
    ax2.axhline(0, color=GREY, lw=0.6)
    ax2.set(xlabel=tr("induction.step"), ylabel=tr("induction.icl"))
    twin = ax2.twinx()
    twin.plot(steps, r.loss, "-", color=BLUE, alpha=0.35, lw=0.8)
    twin.plot(steps, r.one_layer.loss, "--", color=INK, alpha=0.35, lw=0.8)
    twin.set_ylabel(tr("induction.loss"), fontsize=8)
    ax2.legend(fontsize=7, loc="lower left")

    labels = r.text.chars
    for ax, m, key in (
        (ax3, r.text.previous_map, "induction.map_previous"),
        (ax4, r.text.induction_map, "induction.map_induction"),
    ):
        ax.imshow(m.weights, cmap="Blues", vmin=0, vmax=1)
        ax.set_xticks(range(len(labels)), labels, fontsize=6)
        ax.set_yticks(range(len(labels)), labels, fontsize=6)
        ax.set_title(tr(key, layer=m.layer, head=m.head), fontsize=9)
    fig.suptitle(tr("induction.title"), fontsize=13)
    fig.tight_layout()

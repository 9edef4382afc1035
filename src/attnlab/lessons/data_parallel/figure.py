"""The figure of `attnlab explain data-parallel` (and of its page): `plot(result, fig, tr)` draws the lesson's
numbers; it computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels

FLOOR = 1e-10  # a difference of exactly 0 drawn at the floor of the log axis


def plot(r, fig, tr: Labels) -> None:
    run, s = r.run, r.split
    grid = fig.add_gridspec(2, 2)

    ax = fig.add_subplot(grid[0, 0])
    names = [p.name for p in run.params]
    xs = range(len(names))
    ax.bar(
        [x - 0.2 for x in xs],
        [max(p.ddp, FLOOR) for p in run.params],
        width=0.4,
        color=BLUE,
        label=tr("data_parallel.ddp"),
    )
    ax.bar(
        [x + 0.2 for x in xs],
        [max(p.alone, FLOOR) for p in run.params],
        width=0.4,
        color=RED,
        label=tr("data_parallel.alone"),
    )
    ax.axhline(r.tolerance, color=INK, ls="--", lw=1, label=tr("data_parallel.tol", tol=r.tolerance))
    ax.set_yscale("log")
    top = max([r.tolerance] + [max(p.ddp, p.alone) for p in run.params])
    ax.set_ylim(FLOOR / 2, top * 1e4)  # room above the bars for the legend
    ax.set_xticks(list(xs), names, rotation=90, fontsize=6)
    ax.set(ylabel=tr("data_parallel.diff_axis"), title=tr("data_parallel.params_title"))
    ax.legend(fontsize=7, loc="upper left", ncol=3)

    ax = fig.add_subplot(grid[0, 1])
    steps = range(1, run.steps + 1)
    ax.plot(steps, run.losses_one, "o-", color=INK, label=tr("data_parallel.one"))
    for rank, losses in enumerate(run.losses_ranks):
        ax.plot(steps, losses, ".:", color=(BLUE, RED)[rank % 2], label=tr("data_parallel.rank", r=rank))
    ax.plot(
        steps, [sum(x) / len(x) for x in zip(*run.losses_ranks)], "x", color=GREY, ms=9, label=tr("data_parallel.mean")
    )
    ax.set_xticks(list(steps))
    ax.set(xlabel=tr("data_parallel.step"), ylabel=tr("data_parallel.loss"), title=tr("data_parallel.loss_title"))
    ax.legend(fontsize=7)

    ax = fig.add_subplot(grid[1, 0])
    ks, sent = [c[0] for c in r.ring_curve], [c[1] for c in r.ring_curve]
    ax.plot(ks, sent, "o-", color=BLUE, ms=3, label=tr("data_parallel.formula"))
    ax.axhline(2 * r.grad_bytes, color=GREY, ls="--", lw=1, label=tr("data_parallel.asymptote"))
    ax.plot([run.world], [run.bytes_per_step[0]], "s", color=RED, ms=8, label=tr("data_parallel.measured"))
    ax.set_xscale("log", base=2)
    ax.set(
        xlabel=tr("data_parallel.ranks_axis"),
        ylabel=tr("data_parallel.bytes_axis"),
        title=tr("data_parallel.ring_title"),
    )
    ax.legend(fontsize=7)

    ax = fig.add_subplot(grid[1, 1])
    ax.bar(
        range(len(s.stages)), [x.mixed_gb for x in s.stages], color=[BLUE if x.mixed_fits else RED for x in s.stages]
    )
    for i, x in enumerate(s.stages):
        ax.text(i, x.mixed_gb, f"{x.mixed_gb:.3g}", ha="center", va="bottom", fontsize=8)
    ax.axhline(r.card_bytes / 1e9, color=INK, ls="--", lw=1, label=tr("data_parallel.card", gb=r.card_bytes / 1e9))
    ax.set_yscale("log")
    ax.set_xticks(range(len(s.stages)), [x.label for x in s.stages], fontsize=8)
    ax.set(ylabel=tr("data_parallel.gb_axis"), title=tr("data_parallel.card_title", model=s.model, k=s.k))
    ax.legend(fontsize=7)
    fig.suptitle(tr("data_parallel.title"), fontsize=13)
    fig.tight_layout()

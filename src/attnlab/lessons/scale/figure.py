"""The figure of `attnlab explain scale` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it
computes nothing."""

from __future__ import annotations

from matplotlib import colormaps

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels


def plot(r, fig, tr: Labels) -> None:
    grid = fig.add_gridspec(2, 2)
    ax = fig.add_subplot(grid[0, 0])
    names = [x.name for x in r.published]
    ys = range(len(names))
    ax.barh([y - 0.2 for y in ys], [x.counted for x in r.published], height=0.4, color=BLUE, label=tr("scale.counted"))
    ax.barh(
        [y + 0.2 for y in ys], [x.published for x in r.published], height=0.4, color=GREY, label=tr("scale.published")
    )
    ax.set_xscale("log")
    ax.set_yticks(list(ys), names, fontsize=8)
    ax.invert_yaxis()
    for y, x in zip(ys, r.published):
        ax.text(x.counted, y - 0.2, f" {100 * x.off:+.1f}%", va="center", fontsize=7, color=RED if x.differs else INK)
    ax.set(xlabel=tr("scale.params"), title=tr("scale.params_title"))
    ax.legend(fontsize=7, loc="upper right")

    ax = fig.add_subplot(grid[0, 1])
    trained = [x for x in r.published if x.train_flops]
    ax.barh(range(len(trained)), [x.days_here for x in trained], color=RED)
    ax.set_xscale("log")
    ax.set_yticks(range(len(trained)), [x.name for x in trained], fontsize=8)
    ax.invert_yaxis()
    for y, x in enumerate(trained):
        ax.text(x.days_here, y, f" {x.train_flops:.2g} FLOPs", va="center", fontsize=7)
    ax.set(xlabel=tr("scale.days_axis"), title=tr("scale.days_title", gflops=r.machine.flops_per_s / 1e9))

    s = r.sweep
    ax = fig.add_subplot(grid[1, 0])
    if s and s["runs"]:
        sizes = sorted({run["n_params"] for run in s["runs"]})
        cmap = colormaps["viridis"]
        for i, n in enumerate(sizes):
            pts = sorted((run["flops"], run["val_loss"]) for run in s["runs"] if run["n_params"] == n)
            color = cmap(i / max(1, len(sizes) - 1))
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", ms=3, color=color, label=f"N={n:,}")
        mlp = sorted((m["flops"], m["val_loss"]) for m in s.get("mlp_baseline", []))
        if mlp:
            ax.plot([p[0] for p in mlp], [p[1] for p in mlp], "s--", color=INK, ms=3, label=tr("scale.mlp"))
        ax.set_xscale("log")
        ax.set(xlabel=tr("scale.compute_axis"), ylabel=tr("scale.loss_axis"), title=tr("scale.sweep_title"))
        ax.legend(fontsize=6, ncol=2)
    else:
        ax.bar(range(len(r.vocabularies)), [v.size for v in r.vocabularies], color=BLUE)
        ax.set_xticks(
            range(len(r.vocabularies)), [v.name.split(" (")[0] for v in r.vocabularies], fontsize=7, rotation=15
        )
        for i, v in enumerate(r.vocabularies):
            ax.text(i, v.size, f"{v.size:,}", ha="center", va="bottom", fontsize=7)
        ax.set(ylabel=tr("scale.vocab_axis"), title=tr("scale.vocab_title"))

    ax = fig.add_subplot(grid[1, 1])
    rows = (s or {}).get("emergence", {}).get("rows") or []
    if rows:
        n = [row["n_params"] for row in rows]
        for metric, color, style in (
            ("form_score", RED, "o-"),
            ("exact_recall", RED, "s--"),
            ("form_prob", BLUE, "o-"),
            ("recall_prob", BLUE, "s--"),
        ):
            vals = [row[metric] for row in rows]
            if any(v is not None for v in vals):
                ax.plot(
                    n,
                    [v if v is not None else float("nan") for v in vals],
                    style,
                    color=color,
                    ms=3,
                    label=tr(f"scale.metric.{metric}"),
                )
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=1e-3)  # the right verse's p can be tiny; the exact scores reach 0
        ax.set_ylim(bottom=0, top=1.5)
        ax.set(xlabel=tr("scale.params"), ylabel=tr("scale.score_axis"), title=tr("scale.emergence_title"))
        ax.legend(fontsize=6)
    else:
        ax.axis("off")
        ax.text(0.5, 0.5, tr("scale.no_sweep"), ha="center", va="center", fontsize=9, wrap=True)
    fig.suptitle(tr("scale.title"), fontsize=13)
    fig.tight_layout()

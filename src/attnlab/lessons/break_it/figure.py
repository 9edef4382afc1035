"""The figure of `attnlab explain break`: the intact and the ablated model's loss curves on one chart, every
seed a thin line, the mean a thick one; train loss solid, causal loss dashed. Same conventions as attnlab.lessons.common.figure."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, RED, Labels


def plot(r, fig, tr: Labels) -> None:
    ax = fig.subplots(1, 1)
    for model, color in (("intact", BLUE), ("ablated", RED)):
        rs = [x for x in r.runs if x.model == model]
        for kind, style in (("train", "-"), ("causal", "--")):
            series = [getattr(x, f"{kind}_loss") for x in rs]
            for s in series:
                ax.plot(r.steps_at, s, style, color=color, lw=0.6, alpha=0.35)
            mean = [sum(col) / len(col) for col in zip(*series)]
            ax.plot(r.steps_at, mean, style, color=color, lw=2.2, label=tr(f"break.{model}_{kind}"))
    ax.set(xlabel=tr("break.step"), ylabel=tr("break.loss"))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=9)
    ax.set_title(tr("break.title", ablation=r.ablation, n=len(r.seeds), corpus=r.corpus), fontsize=12)
    fig.tight_layout()

"""The figure of `attnlab explain logit-lens` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers;
it computes nothing. Left, the tuned/logit-lens plot: layers × positions, the colour the lens's probability of the
model's final top token there, the text the lens's own top token. Right, the answer's probability by layer."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, GREY, Labels
from attnlab.lessons.common.view import g


def plot(r, fig, tr: Labels) -> None:
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [max(3, len(r.tokens)), 3]})
    image = ax1.imshow(r.final_p, origin="lower", aspect="auto", cmap="Blues", vmin=0, vmax=1)
    for layer, row in enumerate(r.lens_top):
        for pos, cell in enumerate(row):
            top = cell[0]
            dark = r.final_p[layer][pos] > 0.6
            ax1.text(
                pos,
                layer,
                f"{top.token}\n{g(top.p, 2)}",
                ha="center",
                va="center",
                fontsize=8,
                color="white" if dark else "black",
            )
    T = len(r.tokens)
    ax1.set_xticks(range(T), r.tokens, fontsize=9)
    ax1.set_yticks(range(r.n_layers + 1), [str(layer) for layer in range(r.n_layers + 1)])
    ax1.set(xlabel=tr("logit_lens.position"), ylabel=tr("logit_lens.layer"))
    fig.colorbar(image, ax=ax1, label=tr("logit_lens.final_p"), fraction=0.04)

    layers = range(r.n_layers + 1)
    ax2.plot(layers, r.trained.probs, "o-", color=BLUE, label=tr("logit_lens.trained", answer=r.trained.answer))
    ax2.plot(layers, r.untrained.probs, "s--", color=GREY, label=tr("logit_lens.untrained", answer=r.untrained.answer))
    ax2.set_xticks(list(layers))
    ax2.set(xlabel=tr("logit_lens.layer"), ylabel=tr("logit_lens.answer"), yscale="log")
    ax2.legend(fontsize=8)
    fig.suptitle(tr("logit_lens.title"), fontsize=13)
    fig.tight_layout()

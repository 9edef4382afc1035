"""The figure of `attnlab explain rnn-gradients` (and of its page): `plot(result, fig, tr)` draws the lesson's numbers; it computes nothing."""

from __future__ import annotations

from attnlab.lessons.common.figure import BLUE, GREY, INK, RED, Labels

LAMBDA_COLORS = {0.5: "#2c6fbb", 0.9: "#27ae60", 1.0: "#e67e22", 1.1: "#c0392b"}


def plot(r, fig, tr: Labels) -> None:
    ax1, ax2 = fig.subplots(1, 2)
    curves = list(r.curves)
    if all(c.lam != r.chosen.lam for c in curves):
        curves.append(r.chosen)
    for c in curves:
        color = LAMBDA_COLORS.get(c.lam, INK)
        ax1.semilogy(c.distance, c.bound, ls="--", lw=1, color=color)
        ax1.semilogy(
            c.distance,
            [max(m, 1e-300) for m in c.measured],
            "-",
            lw=2 if c.lam == r.chosen.lam else 1.2,
            color=color,
            label=f"λ = {c.lam:g}",
        )
    ax1.semilogy(r.chosen.distance, r.linear.measured, ":", color=INK, lw=2, label=tr("rnn.linear", lam=r.linear.lam))
    ax1.set(xlabel="t − k", ylabel="‖∂h_t/∂h_k‖₂", title=tr("rnn.title"))

    ax1.legend(fontsize=8, title=tr("rnn.legend"), title_fontsize=8)
    ax2.semilogy(r.lstm.distance, r.lstm.direct_mean, "-", color=BLUE, lw=2, label=tr("rnn.direct_mean"))
    ax2.semilogy(r.lstm.distance, r.lstm.direct_max, "--", color=BLUE, lw=1, label=tr("rnn.direct_max"))
    ax2.semilogy(r.lstm.distance, [max(v, 1e-300) for v in r.lstm.full], "-", color=GREY, lw=1.2, label=tr("rnn.full"))
    ax2.semilogy(
        r.chosen.distance,
        [max(m, 1e-300) for m in r.chosen.measured],
        "-",
        color=RED,
        lw=1.2,
        label=tr("rnn.rnn_chosen", lam=r.chosen.lam),
    )
    ax2.set(xlabel="t − k", ylabel="‖∂c_t/∂c_k‖", title=tr("rnn.lstm_title", f=r.lstm.mean_forget))
    ax2.legend(fontsize=8)
    fig.tight_layout()

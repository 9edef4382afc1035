"""The terminal view of `attnlab explain rnn-gradients`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table


def show(console, r, lang, t) -> None:
    T = len(r.chosen.distance)
    picks = sorted({1, 2, 5, 10, 20, 50, 100, T} & set(range(1, T + 1)))
    cols = (
        ["t−k"]
        + [f"λ={c.lam:g}" for c in r.curves]
        + [f"λ^(t−k), λ={r.chosen.lam:g}", t("explain.rnn_gradients.linear", lang), "LSTM ∏f", "LSTM ‖∂c_t/∂c_k‖"]
    )
    rows = [
        [str(k)]
        + [c.measured[k - 1] for c in r.curves]
        + [r.chosen.bound[k - 1], r.linear.measured[k - 1], r.lstm.direct_mean[k - 1], r.lstm.full[k - 1]]
        for k in picks
    ]
    console.print(table(t("explain.rnn_gradients.table", lang), cols, rows))
    console.print(
        f"{t('explain.rnn_gradients.full_per_step', lang)} {r.lstm.full_per_step:.4g}. "
        + t("explain.rnn_gradients.p.full", lang),
        highlight=False,
    )

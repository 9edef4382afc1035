"""The terminal view of `attnlab explain sqrt-dk`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table


def show(console, r, lang, t) -> None:
    rows = [
        [
            str(s.d_k),
            s.mean,
            s.var,
            s.scaled_var,
            m.max_weight_unscaled,
            m.max_weight_scaled,
            m.grad_norm_unscaled,
            m.grad_norm_scaled,
        ]
        for s, m in zip(r.sweep, r.softmax_sweep)
    ]
    console.print(
        table(
            t("explain.sqrt_dk.table", lang),
            [
                "d_k",
                f"q·k {t('explain.ui.mean', lang)}",
                "Var q·k",
                "Var/d_k",
                t("explain.ui.max_p", lang),
                f"{t('explain.ui.max_p', lang)} (√d_k)",
                "‖∂p/∂s‖",
                "‖∂p/∂s‖ (√d_k)",
            ],
            rows,
        )
    )
    s = r.softmax
    console.print(
        table(
            t("explain.sqrt_dk.row", lang, d_k=r.params["d_k"]),
            ["", "softmax(s)", "softmax(s/√d_k)"],
            [
                [t("explain.ui.max_weight", lang), s.max_weight_unscaled, s.max_weight_scaled],
                [t("explain.ui.entropy", lang, max=f"{r.max_entropy:.3f}"), s.entropy_unscaled, s.entropy_scaled],
                ["‖∂p/∂s‖_F", s.grad_norm_unscaled, s.grad_norm_scaled],
            ],
        )
    )

"""The terminal view of `attnlab explain position-wise`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import g, table


def show(console, r, lang, t) -> None:
    for layer in r.layers:
        n = len(layer.block_norms)
        rows = [
            [f"y_{i}", *[("[dim]" if v == 0 else "[bold]") + g(v, 3) for v in row]]
            for i, row in enumerate(layer.block_norms)
        ]
        title = (
            f"{t('explain.plot.pw.' + layer.layer, lang)} — {t('explain.plot.pw.off', lang, v=layer.off_diagonal_max)}"
        )
        console.print(table(title, ["‖∂y_i/∂x_j‖"] + [f"x_{j}" for j in range(n)], rows))

"""The terminal view of `attnlab explain positional`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table


def show(console, r, lang, t) -> None:
    rows = [
        [
            str(x.i),
            x.omega,
            x.angle,
            f"[[{x.matrix[0][0]:.4f}, {x.matrix[0][1]:.4f}], [{x.matrix[1][0]:.4f}, {x.matrix[1][1]:.4f}]]",
            r.wavelengths[x.i],
            x.max_error,
        ]
        for x in r.rotations[:8]
    ]
    console.print(
        table(
            t("explain.positional.table", lang, delta=r.params["delta"]),
            ["i", "ω_i", "ω_i·Δ", "R(Δ)", t("explain.ui.wavelength", lang), t("explain.ui.max_error", lang)],
            rows,
        )
    )
    console.print(t("explain.ui.more_rows", lang, n=len(r.rotations)), style="dim")
    console.print(r.note, style="yellow")

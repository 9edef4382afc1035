"""The terminal view of `attnlab explain permutation`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import g, table


def show(console, r, lang, t) -> None:
    console.print(f"{''.join(r.tokens)}  →  {''.join(r.shuffled)}   perm = {r.perm}")
    for case in (r.without_positions, r.with_positions):
        key = "explain.permutation.with" if case.with_positions else "explain.permutation.without"
        rows = [
            [a, ", ".join(g(v, 3) for v in out_a), b, ", ".join(g(v, 3) for v in out_b)]
            for a, out_a, b, out_b in zip(r.tokens, case.outputs, r.shuffled, case.outputs_shuffled)
        ]
        console.print(
            table(
                t(key, lang, diff=f"{case.max_diff:.2e}"),
                ["", t("explain.ui.out_original", lang), "", t("explain.ui.out_shuffled", lang)],
                rows,
            )
        )

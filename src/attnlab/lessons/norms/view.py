"""The terminal view of `attnlab explain norms`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import table


def show(console, r, lang, t) -> None:
    names = ("ln_alone", "ln_in_a", "ln_in_b", "bn_in_a", "bn_in_b", "bn_eval_a", "bn_eval_b")
    rows = [[str(k), r.sample[k], *[getattr(r, n)[k] for n in names]] for k in range(min(len(r.sample), 16))]
    console.print(
        table(
            t("explain.norms.table", lang),
            [t("explain.norms.feature", lang), "x"] + [t(f"explain.plot.norms.{n}", lang) for n in names],
            rows,
        )
    )

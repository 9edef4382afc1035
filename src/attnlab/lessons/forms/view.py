"""The terminal view of `attnlab explain forms`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import g


def show(console, r, lang, t) -> None:
    for form in r.forms:
        console.rule(form.name)
        console.print(f"{form.attention} · {form.examples}")
        console.print(form.good_for, style="dim")
        for b in form.blocks:
            console.print(
                f"  {b.where} ({b.module}): {', '.join(b.children)}  —  attention: {', '.join(b.attention_modules)}"
            )
        for m in form.masks:
            grid = "\n".join("    " + " ".join("■" if v else "·" for v in row) for row in m.observed)
            console.print(f"  {t('explain.plot.forms.mask.' + m.name, lang)} ({g(m.matches)}):\n{grid}")

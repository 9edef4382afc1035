"""The terminal view of `attnlab explain glossary`: `show(console, r, lang, t)` prints the lesson's numbers; the
lesson computed every number, this only formats."""

from __future__ import annotations

from attnlab.lessons.common.view import g, table


def show(console, r, lang, t) -> None:
    rows = [[s.stage, "(" + ", ".join(map(str, s.shape)) + ")", s.example, s.meaning] for s in r.stages]
    console.print(table(t("explain.glossary.table", lang), ["", "shape", "", ""], rows, show_lines=True))
    rows = [[c.term, c.meaning, c.example] for c in r.context]
    console.print(table(t("explain.glossary.context_title", lang), ["", "", ""], rows, show_lines=True))
    for q in r.quizzes:
        console.print(f"[bold]{q.number}.[/] {q.question}")
        for j, choice in enumerate(q.choices, 1):
            console.print(f"   ({j}) {choice}")
        if q.answer is None:
            console.print("   " + t("explain.ui.quiz_hint", lang, n=q.number), style="dim")
        else:
            console.print(f"   [cyan]{t('explain.ui.your_answer', lang)}[/] {q.committed}")
            if q.correct is not None:
                console.print("   " + ("[green]✓[/]" if q.correct else "[red]✗[/]"))
            console.print(f"   [green]{t('explain.ui.model_answer', lang)}[/] {q.answer}")
            if q.numbers:
                console.print("   a_j·‖v_j‖ = " + ", ".join(g(v) for v in q.numbers["contributions"]))

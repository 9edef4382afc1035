"""The terminal table every lesson's view shares: `g` formats a number, `table` builds a rich table. A column folds
a value too long for the terminal onto the next line (overflow="fold"): at 80 columns a number is never cut to
"0.12…"."""

from __future__ import annotations

import math

from attnlab.display.fmt import MAX_DECIMALS


def g(x, digits: int = 4) -> str:
    """A number as the terminal shows it (the lesson computed it; this only formats), with `digits` significant
    digits, and more where fewer would show a number that is not whole as a whole one (0.99998 -> '0.99998',
    not '1'; the rule of display/fmt.py)."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "✓" if x else "✗"
    if isinstance(x, int):
        return f"{x:,}"
    text = f"{x:.{digits}g}"
    while text.lstrip("-").isdigit() and math.isfinite(x) and x != int(x) and digits < MAX_DECIMALS:
        digits += 1
        text = f"{x:.{digits}g}"
    return text


def table(title: str, columns: list[str], rows: list[list], **kw):
    from rich.table import Table

    table = Table(title=title, title_style="bold", **kw)
    for i, c in enumerate(columns):
        table.add_column(c, justify="left" if i == 0 else "right", overflow="fold")
    for row in rows:
        table.add_row(*[r if isinstance(r, str) else g(r) for r in row])
    return table


CLAIM_MARKS = {"shown": "[green]✓[/]", "not_shown": "[yellow]○[/]", "contradicted": "[red]✗[/]"}


def claim_mark(c) -> str:
    """A claim's mark in rich markup: ✓ shown, ○ not shown at these settings, ✗ contradicted."""
    return CLAIM_MARKS.get(c.status, CLAIM_MARKS["not_shown"])


def claim_text(c) -> str:
    """A claim's sentence and, dimmed below it, its comparison (control, margin, measured), in rich markup."""
    from rich.markup import escape

    null = getattr(c, "null", None)
    return (
        escape(c.text)
        + (f"\n[dim]{escape(c.versus)}[/]" if c.versus else "")
        + (f"\n[dim]{escape(null['line'])}[/]" if null else "")
    )


def print_claims(console, claims) -> None:
    """Claims one per line, for views that list them without a table."""
    for c in claims:
        console.print(claim_mark(c) + " " + claim_text(c), highlight=False)

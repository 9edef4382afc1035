"""The terminal table every lesson's view shares: `g` formats a number, `table` builds a rich table."""

from __future__ import annotations


def g(x, digits: int = 4) -> str:
    """A number as the terminal shows it (the lesson computed it; this only formats)."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "✓" if x else "✗"
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:.{digits}g}"


def table(title: str, columns: list[str], rows: list[list], **kw):
    from rich.table import Table

    table = Table(title=title, title_style="bold", **kw)
    for i, c in enumerate(columns):
        table.add_column(c, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*[r if isinstance(r, str) else g(r) for r in row])
    return table

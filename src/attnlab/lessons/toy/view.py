"""The terminal view of `attnlab toy`: both heads' matrices for one query, in the page's number format (the lesson
computed every number; this only formats)."""

from __future__ import annotations


def show(lab, lang: str) -> None:
    from rich.columns import Columns
    from rich.console import Console
    from rich.table import Table

    from attnlab.display.fmt import num  # the page's number format, so terminal and page read alike
    from attnlab.i18n import t

    console = Console()
    features = [t(f"toy.feature.{f}", lang) for f in lab.features]

    def matrix(m, rows, cols, title, sel=None, heat=False):
        table = Table(title=title, title_style="bold", show_edge=False, pad_edge=False, min_width=10)
        table.add_column("", overflow="fold")
        for c in cols:
            table.add_column(str(c), justify="right", overflow="fold")
        for i, row in enumerate(m):
            style = "bold red" if i == sel else None
            label = ("▸ " if i == sel else "") + str(rows[i])
            cells = [shaded(x) if heat else num(x) for x in row]
            table.add_row(label, *cells, style=style)
        return table

    console.rule(f"[bold]{t('toy.title', lang)}")
    mask = t("toy.lab.status.causal", lang) if lab.causal else t("toy.lab.status.full", lang)
    console.print(f"query = {lab.query} ({lab.query_position}), {mask}")
    console.print(matrix(lab.X, lab.tokens, features, "X (4×4)", sel=lab.query_index))
    for h in lab.heads:
        console.rule(t(f"toy.head.{h.name}", lang))
        console.print(
            Columns(
                [
                    matrix(h.W_Q, features, [1, 2], "W_Q"),
                    matrix(h.W_K, features, [1, 2], "W_K"),
                    matrix(h.W_V, features, [1, 2], "W_V"),
                ]
            )
        )
        console.print(
            Columns(
                [
                    matrix(h.Q, lab.tokens, [1, 2], "Q = X W_Q", lab.query_index),
                    matrix(h.K, lab.tokens, [1, 2], "K = X W_K"),
                    matrix(h.V, lab.tokens, [1, 2], "V = X W_V"),
                ]
            )
        )
        console.print(
            Columns(
                [
                    matrix(h.masked_scores, lab.tokens, lab.tokens, "S = QKᵀ/√2", lab.query_index),
                    matrix(h.weights, lab.tokens, lab.tokens, "A = softmax(S)", lab.query_index, heat=True),
                    matrix(h.output, lab.tokens, [1, 2], "O = A V", lab.query_index),
                ]
            )
        )
        terms = " + ".join(f"{num(a)}·({num(v[0])}, {num(v[1])})" for a, v in zip(h.row.weights, h.V) if a > 0)
        console.print(f"o[{lab.query}] = {terms} = ({num(h.row.output[0])}, {num(h.row.output[1])})")
    console.rule(t("toy.lab.concat.h", lang))
    console.print(matrix(lab.concat, lab.tokens, [1, 2, 3, 4], "[O₁ | O₂]", lab.query_index))
    console.print(t("toy.lab.concat.note", lang), style="dim")


def shaded(a: float) -> str:
    from attnlab.display.fmt import num

    # The number is always printed; the shade only repeats it.
    shade = "on grey30" if a >= 0.5 else ("on grey15" if a >= 0.2 else "")
    return f"[{shade}]{num(a)}[/]" if shade else num(a)

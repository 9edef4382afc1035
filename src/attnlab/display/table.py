"""A matrix as a labelled HTML table for a notebook cell, drawn as the web lab draws its `.mat` tables
(lessons/common/macros.html, lab.css): a caption, the columns' and rows' labels as <th> (tokens, features),
each number rounded honestly (attnlab.display.fmt), the chosen query's row marked ▸, a weight matrix shaded
by its weight, and a masked cell (a −∞ score, a weight the mask zeroed, a · of the mask) hatched.

The look rides on a small <style> (`STYLE`, put once in the output) scoped to `.attnlab-mat`; what carries
meaning (the shade, the hatch) is inline, so it survives a notebook that drops <style>.
"""

from __future__ import annotations

from collections.abc import Sequence

from attnlab.display.heatmap import HATCH_BASE, HATCH_INK, HATCH_LINE, esc, number

HATCH = f"color:{HATCH_INK};background:repeating-linear-gradient(135deg,{HATCH_BASE} 0 5px,{HATCH_LINE} 5px 7px)"
HEAT = (31, 78, 150)  # lab.css --heat, #1f4e96
PAPER = (247, 246, 241)  # lab.css's heatmap ground, #f7f6f1
STYLE = (
    "<style>.attnlab-mat{border-collapse:separate;border-spacing:2px;font-variant-numeric:tabular-nums;"
    "display:inline-table;vertical-align:top;margin:0 1.2em .8em 0}"
    ".attnlab-mat caption{caption-side:top;text-align:left;font-weight:600;white-space:nowrap;padding-bottom:2px}"
    ".attnlab-mat th{font-weight:500;color:#6b7283;padding:1px 5px;text-align:center;background:none}"
    ".attnlab-mat th[scope=row]{text-align:right;white-space:nowrap}"
    ".attnlab-mat td{text-align:right;padding:2px 6px;min-width:2.9em;background:#f4f2ec;border-radius:4px}"
    ".attnlab-mat tr.sel th[scope=row]{color:#c8452c;font-weight:700}"
    ".attnlab-mat tr.sel td{box-shadow:inset 0 0 0 1.5px #c8452c}</style>"
)


def heat(a: float) -> str:
    """A weight in [0, 1] as the web's heatmap shade (color-mix of --heat into the paper), white ink when dark."""
    a = max(0.0, min(1.0, float(a)))
    r, g, b = (round(p + (h - p) * a) for h, p in zip(HEAT, PAPER))
    return f"background:rgb({r},{g},{b});color:{'#fff' if a >= 0.5 else '#222'}"


def _cell(x) -> str:
    """A cell's text: ✓ / · for a mask's boolean, honest rounding for a number (−∞ for a masked score)."""
    if isinstance(x, bool):
        return "✓" if x else "·"
    return number(x) if x is None or isinstance(x, (int, float)) else str(x)


def table(
    matrix: Sequence[Sequence],
    rows: Sequence[str],
    cols: Sequence[str],
    caption: str,
    *,
    mask: Sequence[Sequence[bool]] | None = None,
    heat_map: bool = False,
    sel: int | None = None,
    name: str = "",
) -> str:
    """`matrix` (numbers, None = −∞, or booleans for a mask; strings are printed as given) with `rows` and
    `cols` as its labels and `caption` (HTML: the caller escapes it) above. `mask` (True = may attend) hatches what it forbids; `heat_map` shades each cell by its
    value (weights in [0, 1]); `sel` marks one row as the chosen query's; `name` is the table's data-name."""
    head = "".join(f'<th scope="col">{esc(c)}</th>' for c in cols)
    body = []
    for i, (label, row) in enumerate(zip(rows, matrix)):
        cells = []
        for j, x in enumerate(row):
            masked = x is None or x is False or (mask is not None and not mask[i][j])
            style = HATCH if masked else heat(x) if heat_map and isinstance(x, (int, float)) else ""
            attrs = (' class="masked"' if masked else "") + (f' style="{style}"' if style else "")
            cells.append(f"<td{attrs}>{esc(_cell(x))}</td>")
        mark = "▸ " if i == sel else ""
        body.append(
            f'<tr{" class=sel" if i == sel else ""}><th scope="row">{mark}{esc(label)}</th>{"".join(cells)}</tr>'
        )
    named = f' data-name="{esc(name)}"' if name else ""
    return (
        f'<table class="attnlab-mat"{named}>{f"<caption>{caption}</caption>" if caption else ""}'
        f"<thead><tr><th></th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )

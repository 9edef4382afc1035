"""Plain-text layout for `attnlab real` in a terminal of any width: a T x T matrix split into column blocks that
fit, and a list of entries packed into lines. Formatting only; the lesson computed every number.

Widths are display cells (rich.cells.cell_len), so a Chinese token counts two.
"""

from __future__ import annotations

from rich.cells import cell_len

GAP = 1  # spaces between two columns
LABEL_SHARE = 4  # a row or column label takes at most 1/LABEL_SHARE of the width; only a longer one is shortened


def clip(text: str, most: int) -> str:
    """text cut to `most` cells with a trailing '…' (only labels are ever cut; numbers never are)."""
    if cell_len(text) <= most:
        return text
    out = ""
    for ch in text:
        if cell_len(out + ch) > most - 1:
            break
        out += ch
    return out + "…"


def pad(text: str, width: int, right: bool = True) -> str:
    space = " " * max(width - cell_len(text), 0)
    return space + text if right else text + space


def blocks(cells: list[list[str]], rows: list[str], cols: list[str], width: int) -> list[tuple[int, int, list[str]]]:
    """cells[i][j] already formatted -> [(first column, last column + 1, lines)], each line at most `width` cells:
    as many whole columns per block as fit beside the row labels, every column as wide as its widest entry."""
    most = max(width // LABEL_SHARE, 4)
    rows = [clip(r, most) for r in rows]
    cols = [clip(c, most) for c in cols]
    label = max(map(cell_len, rows), default=0)
    widths = [max([cell_len(c)] + [cell_len(row[j]) for row in cells]) for j, c in enumerate(cols)]
    out, start = [], 0
    while start < len(cols):
        end, used = start, label
        while end < len(cols) and (end == start or used + GAP + widths[end] <= width):
            used += GAP + widths[end]
            end += 1
        head = pad("", label) + "".join(" " * GAP + pad(cols[j], widths[j]) for j in range(start, end))
        body = [
            pad(r, label, right=False) + "".join(" " * GAP + pad(cells[i][j], widths[j]) for j in range(start, end))
            for i, r in enumerate(rows)
        ]
        out.append((start, end, [head] + body))
        start = end
    return out


def pack(lead: str, items: list[str], width: int, sep: str = "  ", indent: int = 2) -> list[str]:
    """'lead item  item  item', continued on indented lines where the next item would pass `width` (an item is
    never split)."""
    lines, line, first = [], lead, True
    for item in items:
        joined = line + (" " if first else sep) + item
        if cell_len(joined) <= width:
            line = joined
        else:
            lines.append(line)
            line = " " * indent + item
        first = False
    return lines + [line]

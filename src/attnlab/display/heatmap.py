"""A matrix as an inline SVG heatmap for a notebook cell: each cell's shade is its share of the largest |value|,
and it prints its value, rounded honestly (attnlab.display.fmt: 0.99998 is never "1", 2e-5 never "0") and
never wider than its cell: the cells are as wide as the longest number or column label they hold, so
neighbouring numbers cannot run together ("0.02540.0515"). Rows and columns carry labels (tokens,
features) when the caller has them; a boolean matrix (a mask) prints ✓ where a query may attend and · where
the mask sets the score to −∞.
"""

from __future__ import annotations

import html
import math
import unicodedata
from collections.abc import Sequence

from attnlab.display.fmt import num

MAX_CELLS = 24  # a matrix side drawn as a heatmap; bigger ones are summarized by their shape
CELL = 34  # px: the smallest cell
FONT = 11  # px
PAD = 10  # px of air around a cell's text
CORNER = "q \\ k"  # a square matrix of tokens: queries down, keys across


def esc(x: object) -> str:
    return html.escape(str(x), quote=True)


def number(x) -> str:
    """A cell's text: ✓/✗ for a bool, −∞ for a masked score (None), honest rounding for a float."""
    if isinstance(x, bool):
        return "✓" if x else "✗"
    if isinstance(x, int):
        return str(x)
    if x is not None and math.isfinite(x) and abs(x) >= 1e4:
        return f"{x:.2e}"
    return num(x)


def text_px(text: str) -> float:
    """A generous width of `text` at FONT px in a sans-serif font: 0.65 em a narrow character (DejaVu Sans's digits
    are 0.64 em, the widest common fallback), 1 em a wide one (Chinese)."""
    wide = sum(unicodedata.east_asian_width(c) in "WF" for c in text)
    return FONT * (0.65 * (len(text) - wide) + 1.0 * wide)


def heatmap(
    matrix: Sequence[Sequence],
    rows: Sequence[str] | None = None,
    cols: Sequence[str] | None = None,
    title: str = "",
    corner: str = "",
) -> str:
    n, m = len(matrix), len(matrix[0])
    if n > MAX_CELLS or m > MAX_CELLS:
        return f"<code>{esc(title)} ({n}×{m})</code>"
    mask = all(isinstance(v, bool) for r in matrix for v in r)
    texts = [["✓" if v else "·" for v in r] if mask else [number(v) for v in r] for r in matrix]
    cell = max([CELL] + [text_px(s) + PAD for r in texts for s in r] + [text_px(c) + 4 for c in cols or []])
    cell = math.ceil(cell)
    left = math.ceil(max([text_px(r) + 8 for r in rows or []] + [text_px(corner) + 6 if corner else 4]))
    head = 20 if cols else 4
    width, height = left + m * cell + 4, head + n * cell + 4
    parts = [
        f'<svg width="{width}" height="{height}" role="img" aria-label="{esc(title)}" '
        f'style="font:{FONT}px sans-serif;font-variant-numeric:tabular-nums">'
    ]
    if title:
        parts.append(f"<title>{esc(title)}</title>")
    if corner:
        parts.append(f'<text x="{left - 4}" y="{head - 6}" text-anchor="end" fill="#6b7283">{esc(corner)}</text>')
    for j, c in enumerate(cols or []):
        parts.append(
            f'<text class="col" x="{left + j * cell + cell / 2}" y="{head - 6}" text-anchor="middle">{esc(c)}</text>'
        )
    top = max((abs(v) for r in matrix for v in r if _finite(v)), default=0.0) or 1.0
    for i, row in enumerate(matrix):
        if rows:
            parts.append(
                f'<text class="row" x="{left - 4}" y="{head + i * cell + cell / 2 + 4}" text-anchor="end">'
                f"{esc(rows[i])}</text>"
            )
        for j, v in enumerate(row):
            fill, ink = _shade(v, top, mask)
            x, y = left + j * cell, head + i * cell
            parts.append(
                f'<rect x="{x}" y="{y}" width="{cell - 1}" height="{cell - 1}" fill="{fill}" '
                f'stroke="#ddd"/><text x="{x + cell / 2}" y="{y + cell / 2 + 4}" text-anchor="middle" '
                f'fill="{ink}">{esc(texts[i][j])}</text>'
            )
    parts.append("</svg>")
    if mask:
        parts.append(
            '<div style="font-size:11px;color:#4a5266">✓ = may attend 可以看; · = masked 遮住 '
            "(score −∞, weight 0)</div>"
        )
    return "".join(parts)


def _finite(v) -> bool:
    return v is not None and not isinstance(v, bool) and math.isfinite(v)


def _shade(v, top: float, mask: bool) -> tuple[str, str]:
    """(fill, ink): blue for a positive share of the largest |value|, red for a negative one; a mask is light
    blue where a query may attend and grey where it may not."""
    if mask:
        return ("rgba(30,90,200,0.18)", "#222") if v else ("#eeeeee", "#6b7283")
    share = abs(v) / top if _finite(v) else 0.0
    fill = f"rgba(200,70,40,{share:.3f})" if _finite(v) and v < 0 else f"rgba(30,90,200,{share:.3f})"
    return fill, "#fff" if share > 0.55 else "#222"

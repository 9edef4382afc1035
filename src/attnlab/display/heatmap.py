"""A matrix as an inline SVG heatmap for a notebook cell: each cell's shade is its share of the largest |value|,
and it prints its value, rounded honestly (attnlab.display.fmt: 0.99998 is never "1", 2e-5 never "0") and
never wider than its cell: the cells are as wide as the longest number or column label they hold, so
neighbouring numbers cannot run together ("0.02540.0515"). Rows and columns carry labels (tokens,
features) when the caller has them; a boolean matrix (a mask) prints ✓ where a query may attend and · where
the mask sets the score to −∞. A masked cell (a −∞ score, a weight the mask zeroed, a · of the mask) is hatched
as on the web lab's pages (lab.css, `td.masked`): the same stripes, drawn as lines, so no SVG id is needed.
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
# lab.css's hatch: repeating-linear-gradient(135deg, #f1efe9 0 5px, #e6e3da 5px 7px), greyed text
HATCH_BASE, HATCH_LINE, HATCH_INK = "#f1efe9", "#e6e3da", "#9aa0ad"
HATCH_STEP = 7 * math.sqrt(2)  # a 7 px period across 135° stripes is 7√2 along x + y


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
    mask: Sequence[Sequence[bool]] | None = None,
) -> str:
    """`mask` (True = may attend), when given, hatches the cells it forbids, as a None (−∞) value always is."""
    n, m = len(matrix), len(matrix[0])
    if n > MAX_CELLS or m > MAX_CELLS:
        return f"<code>{esc(title)} ({n}×{m})</code>"
    if mask is not None and (len(mask) != n or any(len(r) != m for r in mask)):
        mask = None  # a mask of another shape is not this matrix's: hatch nothing rather than the wrong cells
    is_mask = all(isinstance(v, bool) for r in matrix for v in r)
    texts = [["✓" if v else "·" for v in r] if is_mask else [number(v) for v in r] for r in matrix]
    cell = max([CELL] + [text_px(s) + PAD for r in texts for s in r] + [text_px(c) + 4 for c in cols or []])
    cell = math.ceil(cell)
    left = math.ceil(max([text_px(r) + 8 for r in rows or []] + [text_px(corner) + 6 if corner else 4]))
    head = 20 if cols else 4
    width, height = left + m * cell + 4, head + n * cell + 4
    parts = [
        f'<svg width="{width}" height="{height}" role="img" aria-label="{esc(title)}" '
        f'style="font-size:{FONT}px;font-variant-numeric:tabular-nums">'  # the family: the output's (glyphs)
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
            x, y = left + j * cell, head + i * cell
            hidden = v is None or (v is False if is_mask else mask is not None and not mask[i][j])
            if hidden:
                parts.append(_hatched(x, y, cell - 1))
                ink = HATCH_INK
            else:
                fill, ink = _shade(v, top, is_mask)
                parts.append(
                    f'<rect x="{x}" y="{y}" width="{cell - 1}" height="{cell - 1}" fill="{fill}" stroke="#ddd"/>'
                )
            parts.append(
                f'<text x="{x + cell / 2}" y="{y + cell / 2 + 4}" text-anchor="middle" fill="{ink}">'
                f"{esc(texts[i][j])}</text>"
            )
    parts.append("</svg>")
    if is_mask:
        parts.append(
            '<div style="font-size:11px;color:#4a5266">✓ = may attend 可以看; 斜纹 · = masked 遮住 '
            "(score −∞, weight 0)</div>"
        )
    return "".join(parts)


def _hatched(x: float, y: float, w: float) -> str:
    """A masked cell at (x, y), w px square: the pale base, the darker 135° stripes (lines x + y = const, clipped
    to the square by hand), then the cell's outline on top so no stripe end shows past it."""
    lines = []
    u = HATCH_STEP * 6 / 7  # the first stripe's centre: 6 px into the 7 px period, as lab.css's 5px-7px band
    while u < 2 * w:
        x1, y1, x2, y2 = max(0.0, u - w), min(u, w), min(u, w), max(0.0, u - w)
        lines.append(f"M{x + x1:.1f} {y + y1:.1f}L{x + x2:.1f} {y + y2:.1f}")
        u += HATCH_STEP
    return (
        f'<g class="masked"><rect x="{x}" y="{y}" width="{w}" height="{w}" fill="{HATCH_BASE}"/>'
        f'<path class="hatch" d="{"".join(lines)}" stroke="{HATCH_LINE}" stroke-width="2"/></g>'
        f'<rect x="{x}" y="{y}" width="{w}" height="{w}" fill="none" stroke="#ddd"/>'
    )


def _finite(v) -> bool:
    return v is not None and not isinstance(v, bool) and math.isfinite(v)


def _shade(v, top: float, is_mask: bool) -> tuple[str, str]:
    """(fill, ink): blue for a positive share of the largest |value|, red for a negative one; a mask is light
    blue where a query may attend and grey where it may not."""
    if is_mask:
        return ("rgba(30,90,200,0.18)", "#222") if v else ("#eeeeee", "#6b7283")
    share = abs(v) / top if _finite(v) else 0.0
    fill = f"rgba(200,70,40,{share:.3f})" if _finite(v) and v < 0 else f"rgba(30,90,200,{share:.3f})"
    return fill, "#fff" if share > 0.55 else "#222"

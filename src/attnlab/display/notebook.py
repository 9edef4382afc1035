"""Lesson results, traces and attention weights in Jupyter: `_repr_html_` as self-contained HTML.

Offline like the lab: no script, no stylesheet link, no URL; a matrix is an inline SVG heatmap whose cells
print their numbers. A view only: it shows what a lesson, a trace or attention returned and computes
nothing but the layout (weights are shown as given, never recomputed).

    from attnlab.lessons.toy.lesson import toy_lab
    toy_lab("它")                       # a notebook cell shows the lesson as HTML
    Weights(weights, tokens)             # attnlab.nn.attention's weights, (T_q, T_k) or (B, H, T_q, T_k)
    trace(model, idx)                    # every recorded tensor's shape, and each layer's attention heatmaps
"""

from __future__ import annotations

import dataclasses
import html
import math
from collections.abc import Sequence

MAX_ITEMS = 8  # list items (dataclasses) shown before "… n more"
MAX_CELLS = 24  # a matrix side drawn as a heatmap; bigger ones are summarized by their shape
CELL = 34  # px


def _esc(x: object) -> str:
    return html.escape(str(x), quote=True)


def _num(x: float) -> str:
    if isinstance(x, bool) or x is None:
        return "—" if x is None else ("✓" if x else "✗")
    if isinstance(x, int):
        return str(x)
    if math.isnan(x) or math.isinf(x):
        return str(x)
    return f"{x:.3g}" if abs(x) < 1e4 else f"{x:.2e}"


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) or x is None


def _is_matrix(x) -> bool:
    return (isinstance(x, list) and x and all(isinstance(r, list) and r for r in x)
            and all(_is_number(v) for r in x for v in r) and len({len(r) for r in x}) == 1)


def heatmap(matrix: Sequence[Sequence[float | None]], rows: Sequence[str] | None = None,
            cols: Sequence[str] | None = None, title: str = "") -> str:
    """An inline SVG heatmap: each cell's shade is its share of the largest |value|, and it prints the value."""
    n, m = len(matrix), len(matrix[0])
    if n > MAX_CELLS or m > MAX_CELLS:
        return f"<code>{_esc(title)} ({n}×{m})</code>"
    top = max((abs(v) for r in matrix for v in r if v is not None and math.isfinite(v)), default=0.0) or 1.0
    left, head = (40 if rows else 4), (20 if cols else 4)
    width, height = left + m * CELL + 4, head + n * CELL + 4
    parts = [f'<svg width="{width}" height="{height}" role="img" '
             f'aria-label="{_esc(title)}" style="font:11px sans-serif">']
    if title:
        parts.append(f"<title>{_esc(title)}</title>")
    for j, c in enumerate(cols or []):
        parts.append(f'<text x="{left + j * CELL + CELL / 2}" y="{head - 6}" text-anchor="middle">{_esc(c)}</text>')
    for i, row in enumerate(matrix):
        if rows:
            parts.append(f'<text x="{left - 4}" y="{head + i * CELL + CELL / 2 + 4}" text-anchor="end">'
                         f"{_esc(rows[i])}</text>")
        for j, v in enumerate(row):
            share = 0.0 if v is None or not math.isfinite(v) else abs(v) / top
            fill = f"rgba(200,70,40,{share:.3f})" if v is not None and v < 0 else f"rgba(30,90,200,{share:.3f})"
            x, y = left + j * CELL, head + i * CELL
            ink = "#fff" if share > 0.55 else "#222"
            parts.append(f'<rect x="{x}" y="{y}" width="{CELL - 1}" height="{CELL - 1}" fill="{fill}" '
                         f'stroke="#ddd"/><text x="{x + CELL / 2}" y="{y + CELL / 2 + 4}" text-anchor="middle" '
                         f'fill="{ink}">{_esc(_num(v))}</text>')
    parts.append("</svg>")
    return "".join(parts)


CLAIM_MARKS = {"shown": ("✓", "#2f7d4f"), "not_shown": ("○", "#6b7283"), "contradicted": ("✗", "#b3261e")}


def _claim(c) -> str:
    """A lesson's claim as one line: its mark, its sentence, and its comparison (control, margin) below."""
    mark, color = CLAIM_MARKS.get(c.status, CLAIM_MARKS["not_shown"])
    return (f'<span style="color:{color};font-weight:700">{mark}</span> {_esc(c.text)}'
            f'<br><small style="color:#4a5266">{_esc(c.versus)}</small>')


def _value(x, depth: int) -> str:
    if dataclasses.is_dataclass(x) and hasattr(x, "status") and hasattr(x, "versus"):
        return _claim(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return html_of(x, depth + 1) if depth < 2 else f"<code>{_esc(type(x).__name__)}</code>"
    if _is_matrix(x):
        return heatmap(x)
    if isinstance(x, list) and x and all(_is_number(v) for v in x):
        shown = ", ".join(_num(v) for v in x[:MAX_CELLS]) + (" …" if len(x) > MAX_CELLS else "")
        return f"<code>({_esc(shown)})</code>"
    if isinstance(x, list) and x and all(dataclasses.is_dataclass(v) for v in x):
        items = "".join(f"<li>{_value(v, depth)}</li>" for v in x[:MAX_ITEMS])
        more = f"<li>… {len(x) - MAX_ITEMS} more</li>" if len(x) > MAX_ITEMS else ""
        return f"<ol>{items}{more}</ol>"
    if isinstance(x, dict):
        return "<table>" + "".join(f"<tr><th>{_esc(k)}</th><td>{_value(v, depth)}</td></tr>"
                                   for k, v in list(x.items())[:MAX_CELLS]) + "</table>"
    if _is_number(x) or isinstance(x, bool):
        return _esc(_num(x))
    text = str(x)
    return _esc(text if len(text) <= 200 else text[:200] + " …")


def html_of(result, depth: int = 0) -> str:
    """A lesson's dataclass as a table of its fields: numbers, vectors, matrices as heatmaps, nested parts."""
    rows = "".join(f'<tr><th style="text-align:left;vertical-align:top">{_esc(f.name)}</th>'
                   f"<td style=\"text-align:left\">{_value(getattr(result, f.name), depth)}</td></tr>"
                   for f in dataclasses.fields(result))
    return (f'<div class="attnlab-repr"><strong>{_esc(type(result).__name__)}</strong>'
            f"<table>{rows}</table></div>")


class Weights:
    """Attention weights to look at: (T_q, T_k), (H, T_q, T_k) or (B, H, T_q, T_k) (the first batch item is
    shown), a tensor or nested lists, with optional token labels."""

    def __init__(self, weights, tokens: Sequence[str] | None = None, keys: Sequence[str] | None = None,
                 name: str = "weights"):
        data = weights.detach().cpu().double().tolist() if hasattr(weights, "detach") else weights
        while _depth(data) > 3:
            data = data[0]
        self.heads = [data] if _depth(data) == 2 else data  # [(T_q, T_k)] per head
        self.tokens, self.keys, self.name = tokens, keys or tokens, name

    def _repr_html_(self) -> str:
        maps = "".join(f"<figure style=\"display:inline-block;margin:4px\">{heatmap(h, self.tokens, self.keys, f'{self.name} head {i + 1}')}"
                       f"<figcaption>{_esc(self.name)} · head {i + 1}</figcaption></figure>"
                       for i, h in enumerate(self.heads))
        return f'<div class="attnlab-repr">{maps}</div>'


def _depth(x) -> int:
    d = 0
    while isinstance(x, list):
        d, x = d + 1, (x[0] if x else None)
    return d


def trace_html(tr, tokens: Sequence[str] | None = None) -> str:
    """A trace: the shape ledger (name, shape, axes) and each recorded attention weights as heatmaps."""
    rows = "".join(f"<tr><td><code>{_esc(e.name)}</code></td><td>{_esc(tuple(e.shape))}</td><td>{_esc(e.dims)}</td></tr>"
                   for e in tr.entries.values())
    maps = "".join(f"<div>{Weights(e.tensor, tokens, name=e.name)._repr_html_()}</div>"
                   for e in tr.entries.values() if e.name.endswith(".weights"))
    return (f'<div class="attnlab-repr"><strong>Trace</strong><table><tr><th>name</th><th>shape</th>'
            f"<th>axes</th></tr>{rows}</table>{maps}</div>")

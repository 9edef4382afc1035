"""Lesson results, traces and attention weights in Jupyter: `_repr_html_` as self-contained HTML.

Offline like the lab: no script, no stylesheet link, no URL; a matrix is an inline SVG heatmap whose cells
print their numbers, its masked cells hatched; the glyphs of the output's Chinese and symbols travel inside it
(attnlab.display.glyphs), so no system font is needed. A view only: it shows what a lesson, a trace or
attention returned and computes nothing but the layout (weights are shown as given, never recomputed).

    from attnlab.lessons.toy.lesson import toy_lab
    toy_lab("它")                       # a notebook cell shows the lesson as HTML
    Weights(weights, tokens)             # attnlab.nn.attention's weights, (T_q, T_k) or (B, H, T_q, T_k)
    trace(model, idx)                    # every recorded tensor's shape, and each layer's attention heatmaps
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from attnlab.display.glyphs import with_glyphs
from attnlab.display.heatmap import CORNER, MAX_CELLS, heatmap
from attnlab.display.heatmap import esc as _esc
from attnlab.display.heatmap import number as _num

MAX_ITEMS = 8  # list items (dataclasses) shown before "… n more"

# Which labels a matrix field's rows and columns carry, for a result that has `tokens` (and `features`), like
# the toy lab: "tokens" and "features" are the result's own lists, "dims" numbers a head's columns 1..d.
AXES = {
    "X": ("tokens", "features"),
    "W_Q": ("features", "dims"),
    "W_K": ("features", "dims"),
    "W_V": ("features", "dims"),
    "Q": ("tokens", "dims"),
    "K": ("tokens", "dims"),
    "V": ("tokens", "dims"),
    "output": ("tokens", "dims"),
    "concat": ("tokens", "dims"),
    "contributions": ("tokens", "dims"),
    "dots": ("tokens", "tokens"),
    "scores": ("tokens", "tokens"),
    "masked_scores": ("tokens", "tokens"),
    "weights": ("tokens", "tokens"),
    "mask": ("tokens", "tokens"),
}

PER_KEY = ("dots", "scores", "weights", "contribution_norms", "value_norms")  # vectors with one number per token
MASKED = ("weights", "masked_scores")  # the matrices a result's own `mask` hatches (scores come before the mask)


def _labels(result, names: dict) -> dict:
    """What a result passes down to its fields (and their nested parts): its tokens and features, and its mask."""
    found = {
        k: getattr(result, k)
        for k in ("tokens", "features")
        if isinstance(getattr(result, k, None), list) and all(isinstance(x, str) for x in getattr(result, k))
    }
    mask = getattr(result, "mask", None)
    if (
        isinstance(mask, list)
        and mask
        and all(isinstance(r, list) and all(isinstance(v, bool) for v in r) for r in mask)
    ):
        found["mask"] = mask
    return {**names, **found}


def _axis(kind: str, size: int, names: dict) -> list[str] | None:
    if kind == "dims":
        return [str(j + 1) for j in range(size)]
    labels = names.get(kind)
    return list(labels) if labels is not None and len(labels) == size else None  # never a mislabelled axis


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) or x is None


def _is_matrix(x) -> bool:
    """Numbers (None = a masked score) or booleans (a mask), in equal rows."""
    if not (isinstance(x, list) and x and all(isinstance(r, list) and r for r in x) and len({len(r) for r in x}) == 1):
        return False
    values = [v for r in x for v in r]
    return all(_is_number(v) for v in values) or all(isinstance(v, bool) for v in values)


def _matrix(name: str, x, names: dict) -> str:
    kinds = AXES.get(name)
    rows = _axis(kinds[0], len(x), names) if kinds else None
    cols = _axis(kinds[1], len(x[0]), names) if kinds else None
    corner = CORNER if kinds and kinds == ("tokens", "tokens") and rows and cols else ""
    return heatmap(x, rows, cols, title=name, corner=corner, mask=names.get("mask") if name in MASKED else None)


CLAIM_MARKS = {"shown": ("✓", "#2f7d4f"), "not_shown": ("○", "#6b7283"), "contradicted": ("✗", "#b3261e")}


def _claim(c) -> str:
    """A lesson's claim as one line: its mark, its sentence, and its comparison (control, margin) below."""
    mark, color = CLAIM_MARKS.get(c.status, CLAIM_MARKS["not_shown"])
    return (
        f'<span style="color:{color};font-weight:700">{mark}</span> {_esc(c.text)}'
        f'<br><small style="color:#4a5266">{_esc(c.versus)}</small>'
        + (f'<br><small style="color:#4a5266">{_esc(c.null["line"])}</small>' if getattr(c, "null", None) else "")
    )


def _value(x, depth: int, name: str = "", names: dict | None = None) -> str:
    """A field's value as HTML; `name` is the field's name and `names` the labels its result passes down."""
    names = names or {}
    if dataclasses.is_dataclass(x) and hasattr(x, "status") and hasattr(x, "versus"):
        return _claim(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return html_of(x, depth + 1, names) if depth < 2 else f"<code>{_esc(type(x).__name__)}</code>"
    if _is_matrix(x):
        return _matrix(name, x, names)
    if isinstance(x, list) and x and all(_is_number(v) for v in x):
        keys = _axis("tokens", len(x), names) if name in PER_KEY else None  # a query's row: one number per key
        items = [f"{keys[j]} {_num(v)}" if keys else _num(v) for j, v in enumerate(x[:MAX_CELLS])]
        shown = ", ".join(items) + (" …" if len(x) > MAX_CELLS else "")
        return f"<code>({_esc(shown)})</code>"
    if isinstance(x, list) and x and all(dataclasses.is_dataclass(v) for v in x):
        items = "".join(f"<li>{_value(v, depth, name, names)}</li>" for v in x[:MAX_ITEMS])
        more = f"<li>… {len(x) - MAX_ITEMS} more</li>" if len(x) > MAX_ITEMS else ""
        return f"<ol>{items}{more}</ol>"
    if isinstance(x, dict):
        return (
            "<table>"
            + "".join(
                f"<tr><th>{_esc(k)}</th><td>{_value(v, depth, str(k), names)}</td></tr>"
                for k, v in list(x.items())[:MAX_CELLS]
            )
            + "</table>"
        )
    if _is_number(x) or isinstance(x, bool):
        return _esc(_num(x))
    text = str(x)
    return _esc(text if len(text) <= 200 else text[:200] + " …")


def html_of(result, depth: int = 0, names: dict | None = None) -> str:
    """A lesson's dataclass as a table of its fields: numbers, vectors, matrices as heatmaps (their rows and
    columns labelled with the result's tokens and features, see AXES), nested parts."""
    names = _labels(result, names or {})
    rows = "".join(
        f'<tr><th style="text-align:left;vertical-align:top">{_esc(f.name)}</th>'
        f'<td style="text-align:left">{_value(getattr(result, f.name), depth, f.name, names)}</td></tr>'
        for f in dataclasses.fields(result)
    )
    return f'<div class="attnlab-repr"><strong>{_esc(type(result).__name__)}</strong><table>{rows}</table></div>'


class Weights:
    """Attention weights to look at: (T_q, T_k), (H, T_q, T_k) or (B, H, T_q, T_k) (the first batch item is
    shown), a tensor or nested lists, with optional token labels. `mask` (True = may attend; (T_q, T_k) for every
    head, or one per head as the weights are) hatches the cells it forbids, as the web lab does."""

    def __init__(
        self,
        weights,
        tokens: Sequence[str] | None = None,
        keys: Sequence[str] | None = None,
        name: str = "weights",
        mask=None,
    ):
        self.heads = _per_head(weights)  # [(T_q, T_k)] per head
        masks = _per_head(mask) if mask is not None else [None]
        self.masks = masks * len(self.heads) if len(masks) == 1 else masks  # one mask for all heads, or one each
        self.tokens, self.keys, self.name = tokens, keys or tokens, name

    def html(self) -> str:
        """The heatmaps without the embedded glyphs (a trace puts several in one output)."""
        maps = "".join(
            f'<figure style="display:inline-block;margin:4px">'
            f"{heatmap(h, self.tokens, self.keys, f'{self.name} head {i + 1}', mask=m)}"
            f"<figcaption>{_esc(self.name)} · head {i + 1}</figcaption></figure>"
            for i, (h, m) in enumerate(zip(self.heads, self.masks))
        )
        return f'<div class="attnlab-repr">{maps}</div>'

    def _repr_html_(self) -> str:
        return with_glyphs(self.html())


def _per_head(x) -> list:
    """A tensor or nested lists, (T_q, T_k), (H, T_q, T_k) or (B, H, T_q, T_k), as a list of (T_q, T_k) lists."""
    if hasattr(x, "detach"):
        x = x.detach().cpu()
        x = x.tolist() if str(x.dtype) == "torch.bool" else x.double().tolist()  # a mask stays booleans
    while _depth(x) > 3:
        x = x[0]
    return [x] if _depth(x) == 2 else x


def _depth(x) -> int:
    d = 0
    while isinstance(x, list):
        d, x = d + 1, (x[0] if x else None)
    return d


def trace_html(tr, tokens: Sequence[str] | None = None) -> str:
    """A trace: the shape ledger (name, shape, axes) and each recorded attention weights as heatmaps."""
    rows = "".join(
        f"<tr><td><code>{_esc(e.name)}</code></td><td>{_esc(tuple(e.shape))}</td><td>{_esc(e.dims)}</td></tr>"
        for e in tr.entries.values()
    )
    maps = "".join(
        f"<div>{Weights(e.tensor, tokens, name=e.name, mask=_recorded_mask(tr, e.name)).html()}</div>"
        for e in tr.entries.values()
        if e.name.endswith(".weights")
    )
    return with_glyphs(
        f'<div class="attnlab-repr"><strong>Trace</strong><table><tr><th>name</th><th>shape</th>'
        f"<th>axes</th></tr>{rows}</table>{maps}</div>"
    )


def _recorded_mask(tr, weights_name: str):
    """Where the same attention's recorded masked scores are −∞ (what its mask forbade), or None without a mask."""
    entry = tr.entries.get(weights_name[: -len("weights")] + "masked_scores")
    return None if entry is None else entry.tensor > float("-inf")

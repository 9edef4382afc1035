"""Geometry for the SVG pictures the templates draw (pixels only; the numbers come from a lesson)."""

from __future__ import annotations

import math

PAD = 26  # room for labels around the drawing


def _label_width(text: str) -> float:
    """Rough pixel width of a 12px label: CJK characters are about twice as wide as Latin ones."""
    return sum(13 if ord(ch) > 0x2E80 else 7 for ch in text)


def _arrow(x1: float, y1: float, x2: float, y2: float, head: float = 9.0) -> dict:
    """A line from (x1, y1) to (x2, y2) and its arrowhead triangle, in pixels."""
    length = math.hypot(x2 - x1, y2 - y1)
    if length < 1e-9:
        return {"x1": x1, "y1": y1, "x2": x2, "y2": y2, "head": "", "zero": True}
    ux, uy = (x2 - x1) / length, (y2 - y1) / length
    h = min(head, length * 0.6)
    bx, by = x2 - ux * h, y2 - uy * h  # the base of the head; the line stops there
    px, py = -uy * h * 0.45, ux * h * 0.45
    pts = f"{x2:.1f},{y2:.1f} {bx + px:.1f},{by + py:.1f} {bx - px:.1f},{by - py:.1f}"
    return {"x1": x1, "y1": y1, "x2": bx, "y2": by, "head": pts, "zero": False}


def vector_sum(
    values: list[list[float]], weights: list[float], output: list[float], labels: list[str], size: int = 260
) -> dict:
    """2-d values v_j (thin, from the origin), the terms a_j v_j laid tip to tail, and o = sum_j a_j v_j (bold)."""
    pts = [(0.0, 0.0), tuple(output), *[tuple(v) for v in values]]
    sx = sy = 0.0
    for (vx, vy), a in zip(values, weights):
        sx, sy = sx + a * vx, sy + a * vy
        pts.append((sx, sy))
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    span = max(x1 - x0, y1 - y0, 1e-9)
    scale = (size - 2 * PAD) / span
    pad_right = PAD
    height = (y1 - y0) * scale + 2 * PAD

    def px(x: float, y: float) -> tuple[float, float]:
        return PAD + (x - x0) * scale, PAD + (y1 - y) * scale  # SVG's y grows downwards

    ox, oy = px(0, 0)
    grid = []
    if span <= 12:  # unit grid lines while they stay readable
        for gx in range(math.ceil(x0), math.floor(x1) + 1):
            grid.append(
                {"x1": px(gx, y0)[0], "y1": px(gx, y0)[1], "x2": px(gx, y1)[0], "y2": px(gx, y1)[1], "axis": gx == 0}
            )
        for gy in range(math.ceil(y0), math.floor(y1) + 1):
            grid.append(
                {"x1": px(x0, gy)[0], "y1": px(x0, gy)[1], "x2": px(x1, gy)[0], "y2": px(x1, gy)[1], "axis": gy == 0}
            )

    tips: dict[tuple[float, float], list[int]] = {}  # values that coincide share one arrow and one label
    for j, v in enumerate(values):
        if math.hypot(*v) > 1e-12:
            tips.setdefault((round(v[0], 9), round(v[1], 9)), []).append(j)
    vals = [
        {
            **_arrow(ox, oy, *px(*tip)),
            "j": js[0],
            "label": " = ".join(labels[j] for j in js),
            "lx": px(*tip)[0],
            "ly": px(*tip)[1],
        }
        for tip, js in tips.items()
    ]
    terms, sx, sy = [], 0.0, 0.0
    for j, ((vx, vy), a) in enumerate(zip(values, weights)):
        nx, ny = sx + a * vx, sy + a * vy
        if math.hypot(nx - sx, ny - sy) * scale >= 0.5:  # a term shorter than half a pixel is not drawn
            terms.append({**_arrow(*px(sx, sy), *px(nx, ny), head=7.0), "j": j, "label": labels[j]})
        sx, sy = nx, ny
    out = {**_arrow(ox, oy, *px(*output), head=11.0), "lx": px(*output)[0], "ly": px(*output)[1]}
    for v in vals:  # a label starts 5px right of its tip; widen the picture until it fits
        pad_right = max(pad_right, v["lx"] + 5 + _label_width(v["label"]) + 4 - (PAD + (x1 - x0) * scale))
    width = (x1 - x0) * scale + PAD + pad_right
    return {
        "width": round(width, 1),
        "height": round(height, 1),
        "origin": (ox, oy),
        "grid": grid,
        "vals": vals,
        "terms": terms,
        "out": out,
    }

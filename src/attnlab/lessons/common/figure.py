"""The figure style every lesson shares (matplotlib, Agg: no display needed), written as PNG or SVG.

Each lesson's `figure.py` has `plot(result, fig, tr)`, which draws the lesson's returned numbers into `fig`;
it computes nothing.
`save(plot, result, path, lang)` makes the figure in the lab's own Chinese font (attnlab.display.fonts,
registered by file: no system font needed), with an installed Chinese font as a fallback for characters the
lab's font lacks, warns once about characters no font has, and writes the file.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import font_manager  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from attnlab.display import fonts  # noqa: E402
from attnlab.i18n import t  # noqa: E402

CJK_FONTS = (
    "Noto Sans CJK SC",
    "Noto Sans SC",
    "WenQuanYi Micro Hei",
    "WenQuanYi Zen Hei",
    "Source Han Sans SC",
    "Microsoft YaHei",
    "SimHei",
    "PingFang SC",
    "Heiti SC",
    "Arial Unicode MS",
)
FORMATS = (".png", ".svg")
RED, BLUE, GREY, INK = "#c0392b", "#2c6fbb", "#8a8a8a", "#222222"
_LOCK = threading.Lock()


def cjk_font() -> str | None:
    """A font family with Chinese glyphs: the lab's own, else an installed one, else None."""
    return fonts.register() or system_cjk_font()


@lru_cache(maxsize=1)
def system_cjk_font() -> str | None:
    """The first installed font family that has Chinese glyphs, or None."""
    for family in CJK_FONTS:
        try:
            font_manager.findfont(font_manager.FontProperties(family=family), fallback_to_default=False)
            return family
        except ValueError:
            continue
    return None


class Labels:
    """t() for figure labels, in English when Chinese was asked for but no Chinese font can be found."""

    def __init__(self, lang: str):
        self.lang = lang if (lang == "en" or cjk_font()) else "en"

    def __call__(self, key: str, **fields) -> str:
        return t(f"explain.plot.{key}", self.lang, **fields)


def save(plot, result, path, *, lang: str = "zh"):
    """Draw `result` with `plot` and write it to `path` (.png or .svg), or as PNG into a binary file object."""
    if hasattr(path, "write"):
        fmt = "png"
    else:
        path = Path(path)
        if path.suffix.lower() not in FORMATS:
            raise ValueError(f"a figure is written as .png or .svg, got {path.name!r}")
        fmt = path.suffix.lower()[1:]
    style = {
        "font.family": fonts.families(system_cjk_font()),
        "axes.unicode_minus": False,
        "svg.fonttype": "path",
        "axes.spines.top": False,
        "axes.spines.right": False,
    }

    def missing(chars: str) -> str:
        return t("fonts.missing_glyphs", lang, chars=chars)

    # rcParams are global: one figure at a time (the web app has threads); missing glyphs: one warning, not 100
    with _LOCK, plt.rc_context(style), fonts.one_warning(missing):
        fig = Figure(figsize=(12, 7.5), dpi=100)  # not pyplot's figure manager: nothing to close or leak
        plot(result, fig, Labels(lang))
        fig.savefig(path, format=fmt, dpi=110, bbox_inches="tight")
    return path


def heat(ax, matrix, *, xticks=None, yticks=None, cmap="Blues", vmin=None, vmax=None, annotate=False, fmt="{:.2f}"):
    m = np.asarray(matrix, dtype=float)
    im = ax.imshow(m, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
    if xticks is not None:
        ax.set_xticks(range(len(xticks)), xticks)
    if yticks is not None:
        ax.set_yticks(range(len(yticks)), yticks)
    if annotate and m.size <= 144:
        lo, hi = im.get_clim()  # white text on the darker 40% of the colour range
        for (i, j), v in np.ndenumerate(m):
            dark = hi > lo and (v - lo) / (hi - lo) > 0.6
            ax.text(j, i, fmt.format(v), ha="center", va="center", fontsize=7, color="white" if dark else INK)
    return im


def seed_curves(ax, xs, per_seed, mean, colour: str, marker: str, label: str) -> None:
    """One thin line per seed (per_seed: [[value per seed] per x]) and their mean, thick and marked: the spread
    a claim that must hold in every seed is read against."""
    for s in range(len(per_seed[0])):
        ax.plot(xs, [v[s] for v in per_seed], "-", color=colour, lw=0.6, alpha=0.45)
    ax.plot(xs, mean, "-" + marker, color=colour, lw=1.8, ms=5, label=label)


def note(fig, text: str) -> None:
    fig.text(0.5, -0.01, text, ha="center", va="top", fontsize=9, color=GREY, wrap=True)

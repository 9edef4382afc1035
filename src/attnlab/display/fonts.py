"""The lab's own Chinese font for figures: registered with matplotlib by file, so Chinese labels render on a
machine with no Chinese font installed and with a fresh matplotlib cache (nothing to install or rebuild).

The font is "Attnlab CJK", a subset of Noto Sans CJK SC (SIL OFL 1.1; `web/static/fonts/OFL.txt`) built by
`tools/build_cjk_font.py`: GB2312, every character of the lab's corpora and of its own strings. Pages get the
same glyphs as a web font (`web/static/fonts.css`). The files live in the web's static folder so that pages and
the static site can serve them; this module only reads the file (no import of attnlab.web).

    with plt.rc_context({"font.family": fonts.families()}), fonts.one_warning(message):
        fig.savefig(...)                            # message(chars) -> the warning's text, in the lab's language

A character the font lacks is drawn as a box: matplotlib would warn once per glyph per draw; `one_warning`
turns that into one `MissingGlyphWarning` naming the characters, once per character per process.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

FAMILY = "Attnlab CJK"  # the family name inside the file (its name table), and the CSS family in fonts.css
FONT_DIR = Path(__file__).resolve().parents[1] / "web" / "static" / "fonts"
FONT_FILE = FONT_DIR / "AttnlabCJK-Regular.otf"  # matplotlib's FreeType reads OTF, not WOFF2 (the pages' copy)
LATIN = "DejaVu Sans"  # ships with matplotlib: Latin, Greek, arrows and maths first, then the lab's CJK font
_GLYPH = re.compile(r"Glyph (\d+) \(.*\) missing from font")
_REPORTED: set[str] = set()
_REPORTED_LOCK = threading.Lock()


class MissingGlyphWarning(UserWarning):
    """Some characters of a figure have no glyph in the lab's fonts and were drawn as boxes."""


@lru_cache(maxsize=1)
def register() -> str | None:
    """Add the lab's font file to matplotlib's font list (its in-memory list, not the cache on disk) and
    return its family name; None when the file is missing (a broken install: figures fall back to English)."""
    if not FONT_FILE.is_file():
        return None
    from matplotlib import font_manager

    font_manager.fontManager.addfont(str(FONT_FILE))
    return FAMILY


def families(*more: str) -> list[str]:
    """matplotlib's font.family fallback list: DejaVu Sans, the lab's CJK font, then `more` (installed fonts
    that may hold a character the subset lacks). Each glyph comes from the first family that has it."""
    lab = register()
    return [LATIN] + ([lab] if lab else []) + [f for f in more if f and f not in (LATIN, lab)]


def _english(chars: str) -> str:
    return f"no glyph in the lab's fonts for these characters, drawn as boxes: {chars}"


@contextmanager
def one_warning(message: Callable[[str], str] = _english):
    """Silence matplotlib's per-glyph "missing from font" warnings inside the block; afterwards warn once
    (MissingGlyphWarning, its text `message(chars)`) naming the characters that no earlier figure of this
    process already reported. (The text comes from the caller: this layer does not import the catalog.)"""
    missing: set[str] = set()
    with warnings.catch_warnings(record=True) as caught:
        warnings.filterwarnings("always", message=_GLYPH.pattern)
        yield
    for w in caught:
        found = _GLYPH.match(str(w.message))
        if found:
            missing.add(chr(int(found[1])))
        else:  # not ours: pass it on as it came
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    with _REPORTED_LOCK:
        new = sorted(missing - _REPORTED)
        _REPORTED.update(new)
    if new:
        warnings.warn(MissingGlyphWarning(message(" ".join(new))), stacklevel=3)

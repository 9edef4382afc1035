"""The glyphs a notebook output uses, carried inside it: Chinese shows on a machine with no Chinese font (a fresh
Colab, Docker or WSL) because the output never asks the system for one.

`with_glyphs(html)` reads the output's visible text, subsets the fonts to exactly its non-ASCII characters,
embeds them in a <style> as base64 @font-face rules, and gives the output a font-family that starts with them.
The order is the lab figures' (attnlab.display.fonts.families): DejaVu Sans, matplotlib's own font, for the
narrow symbols (− ∞ × → ✓ ✗ ·, Greek, subscripts), whose glyphs in a CJK font are a full em wide; then the
lab's CJK font (web/static/fonts) for Chinese and fullwidth punctuation. ASCII is left to the notebook's own
font: every font has it, and leaving it out keeps the output small.

A subset is made once per character set (lru_cache), so a notebook that re-runs a cell does not subset again.
WOFF2 when brotli is installed, else WOFF (zlib, in every Python). Both licences travel with the glyphs: the
subsets keep the fonts' copyright and licence names (SIL OFL 1.1; Bitstream Vera / DejaVu).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import unicodedata
from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path

from attnlab.display.fonts import FONT_FILE as CJK_FILE

NAME_IDS = [0, 1, 2, 3, 4, 5, 6, 13, 14]  # family and style, plus copyright, licence and its address
SANS = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif'
MONO = 'ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas, monospace'
HIDDEN = {"style", "script"}  # elements whose text is not drawn
# Tables a horizontal run of single glyphs does without (vertical metrics, layout, maths); FFTM is FontForge's
# own timestamp, which fontTools cannot subset.
DROP = ["BASE", "VORG", "vhea", "vmtx", "GDEF", "GPOS", "GSUB", "MATH", "kern", "gasp", "FFTM"]


def dejavu_file() -> Path | None:
    """matplotlib's DejaVu Sans (matplotlib is a dependency; found without importing it, which takes a while)."""
    spec = importlib.util.find_spec("matplotlib")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "mpl-data" / "fonts" / "ttf" / "DejaVuSans.ttf"
    return path if path.is_file() else None


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag, attrs):
        if tag in HIDDEN:
            self.hidden += 1

    def handle_endtag(self, tag):
        if tag in HIDDEN and self.hidden:
            self.hidden -= 1

    def handle_data(self, data):
        if not self.hidden:
            self.parts.append(data)


def visible_text(html: str) -> str:
    """The text an HTML fragment draws (character references decoded; <style> and <script> left out)."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    return "".join(parser.parts)


@lru_cache(maxsize=4)
def _cmap(path: str) -> frozenset[int]:
    from fontTools.ttLib import TTFont

    return frozenset(TTFont(path, lazy=True).getBestCmap())


def _wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in "WF"


def faces(chars: str) -> list[tuple[Path, str]]:
    """[(font file, its characters)]: a narrow character DejaVu Sans draws goes to it, the rest to the lab's CJK
    font where it has them (and a wide one only DejaVu has, to DejaVu). A character neither has is left out."""
    dejavu = dejavu_file()
    have_dv = _cmap(str(dejavu)) if dejavu else frozenset()
    have_cjk = _cmap(str(CJK_FILE)) if CJK_FILE.is_file() else frozenset()
    to_dv = [c for c in chars if ord(c) in have_dv and (not _wide(c) or ord(c) not in have_cjk)]
    to_cjk = [c for c in chars if c not in to_dv and ord(c) in have_cjk]
    return [(f, "".join(cs)) for f, cs in ((dejavu, to_dv), (CJK_FILE, to_cjk)) if f and cs]


def flavor() -> str:
    from fontTools.ttLib import woff2

    return "woff2" if woff2.haveBrotli else "woff"


@lru_cache(maxsize=256)
def subset(path: str, chars: str) -> bytes:
    """The font at `path` cut down to `chars` (sorted, unique), as WOFF2 or WOFF bytes; the same bytes every time
    (no timestamp), so a re-run notebook stores the same output."""
    from fontTools import subset as fts
    from fontTools.ttLib import TTFont

    options = fts.Options()
    options.flavor = flavor()
    options.layout_features = []  # no ligatures or vertical forms: one glyph per character is all a table needs
    options.hinting = False
    options.desubroutinize = True  # plain CFF compresses better than subroutines shared by a dozen glyphs
    options.name_IDs = NAME_IDS
    options.drop_tables += DROP
    font = TTFont(path, recalcTimestamp=False)
    for tag in DROP:  # before subsetting: the subsetter would read (slowly) the layout tables it then drops
        if tag in font:
            del font[tag]
    subsetter = fts.Subsetter(options)
    subsetter.populate(text=chars)
    subsetter.subset(font)
    out = io.BytesIO()
    fts.save_font(font, out, options)
    return out.getvalue()


def _family(path: Path, chars: str) -> str:
    # One family per character set: two outputs on one page never shadow each other's glyphs.
    digest = hashlib.sha1(f"{path.name}:{chars}".encode()).hexdigest()[:10]
    return f"attnlab-{digest}"


def with_glyphs(html: str) -> str:
    """`html` with the glyphs of its non-ASCII characters embedded and used first; unchanged when it has none
    (or, in a broken install, when neither font file is there)."""
    chars = "".join(sorted({c for c in visible_text(html) if ord(c) > 0x7E}))
    found = faces(chars) if chars else []
    if not found:
        return html
    kind = flavor()
    rules, families = [], []
    for path, cs in found:
        family = _family(path, cs)
        data = base64.b64encode(subset(str(path), cs)).decode("ascii")
        rules.append(f'@font-face{{font-family:"{family}";src:url(data:font/{kind};base64,{data}) format("{kind}")}}')
        families.append(f'"{family}"')
    scope = "attnlab-g-" + hashlib.sha1(chars.encode()).hexdigest()[:10]
    first = ",".join(families)
    rules.append(f".{scope},.{scope} svg{{font-family:{first},{SANS}}}")
    rules.append(f".{scope} code,.{scope} pre,.{scope} kbd{{font-family:{first},{MONO}}}")
    return f'<div class="{scope}"><style>{"".join(rules)}</style>{html}</div>'

"""Reading a notebook output the way a browser would, for the notebook tests: the HTML through the standard
library's parser (a small element tree), the fonts it embeds through fontTools. Nothing here comes from
attnlab, so a test that uses it checks the lab's output against tools the lab did not write."""

from __future__ import annotations

import base64
import io
import re
import unicodedata
from dataclasses import dataclass, field
from html.parser import HTMLParser

from fontTools.pens.boundsPen import BoundsPen
from fontTools.ttLib import TTFont

VOID = {"br", "hr", "img", "input", "meta", "link", "col", "wbr", "source"}
NOT_DRAWN = {"style", "script", "title"}  # text a page does not draw with its fonts (a tooltip is the system's)
FACE = re.compile(
    r'@font-face\{font-family:"(?P<family>[^"]+)";src:url\(data:font/(?P<kind>woff2?|ttf|otf);base64,'
    r"(?P<data>[A-Za-z0-9+/=]+)\)"
)


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list = field(default_factory=list)  # Elements and strings, in order

    def iter(self, tag: str | None = None):
        """This element and every element below it (depth first), optionally only those named `tag`."""
        if tag is None or self.tag == tag:
            yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.iter(tag)

    def text(self, drawn_only: bool = True) -> str:
        if drawn_only and self.tag in NOT_DRAWN:
            return ""
        return "".join(c if isinstance(c, str) else c.text(drawn_only) for c in self.children)

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Element(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag):
        for depth in range(len(self.stack) - 1, 0, -1):  # close up to the matching open element
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def parse(html: str) -> Element:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root


def styles(root: Element) -> str:
    return "".join(el.text(drawn_only=False) for el in root.iter("style"))


def embedded_fonts(html: str) -> dict[str, tuple[TTFont, int]]:
    """{family: (the decoded font, its size in bytes)} for every base64 @font-face of the output's <style>s."""
    found = {}
    for m in FACE.finditer(styles(parse(html))):
        data = base64.b64decode(m["data"])
        found[m["family"]] = (TTFont(io.BytesIO(data)), len(data))
    return found


def drawn_chars(font: TTFont) -> set[str]:
    """The characters the font maps to a glyph that has an outline (a box-free drawing, not an empty glyph)."""
    glyphs = font.getGlyphSet()
    drawn = set()
    for code, name in font.getBestCmap().items():
        pen = BoundsPen(glyphs)
        glyphs[name].draw(pen)
        if pen.bounds is not None:
            drawn.add(chr(code))
    return drawn


def needs_a_glyph(ch: str) -> bool:
    """A character a font must draw: not ASCII (every font has it) and not a space or a control character."""
    return ord(ch) > 0x7E and unicodedata.category(ch)[0] not in "ZC"


def missing_glyphs(html: str) -> set[str]:
    """The output's drawn non-ASCII characters that none of its embedded fonts draws: with no system font for
    them, these are the boxes a reader would see."""
    drawn = set().union(*(drawn_chars(font) for font, _ in embedded_fonts(html).values()))
    return {c for c in parse(html).text() if needs_a_glyph(c)} - drawn


def font_families(html: str, selector_part: str = "") -> list[list[str]]:
    """The font-family lists of the output's CSS rules whose selector contains `selector_part`."""
    rules = re.findall(r"([^{}]+)\{font-family:([^}]+)\}", styles(parse(html)))
    return [
        [f.strip().strip('"') for f in families.split(",")]
        for sel, families in rules
        if selector_part in sel and not sel.strip().startswith("@")  # a rule, not a face's own name
    ]


def table_grid(table: Element) -> tuple[list[str], list[str], list[list[Element]]]:
    """(column labels, row labels, the <td> cells row by row) of a labelled table (corner cell left out)."""
    head = next(table.iter("thead"))
    cols = [th.text().strip() for th in head.iter("th") if th.attrs.get("scope") == "col"]
    rows, cells = [], []
    for tr in next(table.iter("tbody")).iter("tr"):
        th = [c for c in tr.children if isinstance(c, Element) and c.tag == "th"]
        rows.append(th[0].text().replace("▸", "").strip() if th else "")
        cells.append([c for c in tr.children if isinstance(c, Element) and c.tag == "td"])
    return cols, rows, cells


def tables(html: str, name: str) -> list[Element]:
    """The output's tables whose data-name is `name`, in order."""
    return [t for t in parse(html).iter("table") if t.attrs.get("data-name") == name]

"""The marks the lab prints that its font's source, Noto Sans CJK SC, does not have, drawn here and added to the
lab's font (issue 36, item 6). Without them a machine with no symbol font showed a box where the lab wrote:

    ␃ the end-of-text token (generated text, the lessons' token tables)   ⏎ ␣ a line break and a space as tokens
    ✗ a claim or a check that fails (✓ is in the source)                 ▸ the chosen row, ▾ the course menu
    ✔ the key a lookup picks                                              ✝ an expert no token is routed to

Each is drawn from straight strokes in the font's units (1000 per em; caps 733, x-height 543), so the outlines
are the lab's own and may be added to the OFL subset (a Modified Version, already renamed). tools/build_cjk_font.py
adds them after subsetting; on the shipped files (idempotent: a mark already there is left alone):

    pip install --target /tmp/fontbuild brotli          # fontTools writes WOFF2 with brotli
    PYTHONPATH=/tmp/fontbuild python tools/font_marks.py
"""

from __future__ import annotations

import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "attnlab" / "web" / "static" / "fonts"
POSTSCRIPT = "AttnlabCJK-Regular"
NOTE = " Marks the source lacks (␃ ⏎ ␣ ✗ ▸ ▾ ✔ ✝) are drawn for attnlab (tools/font_marks.py)."


def rect(x0: float, y0: float, x1: float, y1: float) -> list[tuple[float, float]]:
    return [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]


def slant(bottom: float, top: float, y0: float, y1: float, width: float) -> list[tuple[float, float]]:
    """A slanted bar cut level at both ends: from [bottom, bottom + width] at y0 to [top, top + width] at y1."""
    return [(bottom, y0), (bottom + width, y0), (top + width, y1), (top, y1)]


# char -> (advance width, polygons). Overlapping polygons join (nonzero fill: drawn counter-clockwise, below).
MARKS: dict[str, tuple[int, list[list[tuple[float, float]]]]] = {
    "␃": (  # E, T, X stepping down, as the Control Pictures block draws ETX
        720,
        [
            rect(60, 480, 108, 733),
            rect(60, 685, 235, 733),
            rect(60, 583, 215, 629),
            rect(60, 480, 235, 528),
            rect(265, 442, 455, 490),
            rect(336, 235, 384, 490),
            slant(480, 612, 0, 250, 52),
            slant(612, 480, 0, 250, 52),
        ],
    ),
    "⏎": (820, [rect(620, 215, 690, 660), rect(200, 215, 690, 285), [(60, 250), (260, 440), (260, 60)]]),
    "␣": (600, [rect(70, -40, 530, 30), rect(70, -40, 138, 200), rect(462, -40, 530, 200)]),
    "✗": (720, [slant(105, 500, 0, 700, 112), slant(500, 105, 0, 700, 112)]),
    "▸": (600, [[(130, 120), (470, 330), (130, 540)]]),
    "▾": (600, [[(110, 470), (490, 470), (300, 130)]]),
    "✔": (780, [[(290, 10), (740, 660), (620, 750), (290, 250), (140, 470), (30, 380)]]),
    "✝": (640, [rect(265, -60, 375, 760), rect(90, 440, 550, 540)]),
}


def counter_clockwise(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """PostScript outlines wind outer contours counter-clockwise (the shoelace sum is positive)."""
    area = sum(x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in zip(points, points[1:] + points[:1]))
    return points if area > 0 else points[::-1]


def add_marks(font) -> list[str]:
    """Add every mark of MARKS missing from `font` (a CID-keyed CFF OpenType font, as Noto Sans CJK is): a
    charstring under a free CID, its advance (hmtx, vmtx) and its code point in every Unicode cmap subtable.
    Returns the marks added."""
    from fontTools.pens.boundsPen import BoundsPen
    from fontTools.pens.t2CharStringPen import T2CharStringPen

    cmap = font.getBestCmap()
    cff = font["CFF "].cff
    top = cff.topDictIndex[0]
    order = list(font.getGlyphOrder())
    fd = top.FDSelect[order.index(cmap[ord("✓")])]  # the source's own dingbat: its private dict's width rules
    private = top.FDArray[fd].Private
    used = {int(name[3:]) for name in order if name.startswith("cid")}
    free = (cid for cid in range(top.CIDCount - 1, 0, -1) if cid not in used)
    origin = font["VORG"].defaultVertOriginY if "VORG" in font else font["hhea"].ascent
    added = []
    for char, (advance, polygons) in MARKS.items():
        if ord(char) in cmap:
            continue
        name = f"cid{next(free):05d}"
        width = None if advance == private.defaultWidthX else advance - private.nominalWidthX
        pen = T2CharStringPen(width, None)
        bounds = BoundsPen(None)
        for polygon in polygons:
            points = counter_clockwise(polygon)
            for p in (pen, bounds):
                p.moveTo(points[0])
                for point in points[1:]:
                    p.lineTo(point)
                p.closePath()
        charstring = pen.getCharString(private=private, globalSubrs=cff.GlobalSubrs)
        top.CharStrings.charStringsIndex.append(charstring)
        top.CharStrings.charStrings[name] = len(top.CharStrings.charStringsIndex) - 1
        top.FDSelect.append(fd)
        top.charset.append(name)
        order.append(name)
        x_min, _y_min, _x_max, y_max = bounds.bounds
        font["hmtx"][name] = (advance, round(x_min))
        if "vmtx" in font:
            font["vmtx"][name] = (1000, round(origin - y_max))
        for table in font["cmap"].tables:
            if table.isUnicode():
                table.cmap[ord(char)] = name
        added.append(char)
    font.setGlyphOrder(order)
    if added:
        names = font["name"]
        note = names.getDebugName(10) or ""
        if NOTE not in note:
            names.setName(note + NOTE, 10, 3, 1, 0x409)
    return added


def main(out: Path = OUT) -> None:
    from fontTools.ttLib import TTFont
    from web_font_slices import slice_font  # beside this file: run as a script, tools/ is on the path

    try:
        import brotli  # noqa: F401 - fontTools writes WOFF2 with it
    except ImportError:
        sys.exit("install brotli first (see the docstring): the web font's slices must get the marks with the OTF")
    font = TTFont(out / f"{POSTSCRIPT}.otf")
    added = add_marks(font)
    if not added:
        print("every mark is already in the font")
        return
    font.flavor = None
    font.save(out / f"{POSTSCRIPT}.otf")
    slice_font(out / f"{POSTSCRIPT}.otf", out)  # the pages' web font gets the marks too
    print("added", " ".join(added))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)

"""Cut the lab's font into the web font's slices, so that a page downloads only the glyphs it can show.

The lab's font (AttnlabCJK-Regular.otf, about 10,600 characters the pages use it for, 1.8 MB as one WOFF2) was
fetched, decompressed and checked by the browser on every first visit, for a page that shows a few hundred
characters. Browsers fetch a face only when the page holds a character of its `unicode-range`, so the font is
served as slices, one @font-face each, with disjoint ranges:

- slice 00: every character of the lab's own words (its strings, templates, scripts, styles and the texts in its
  code: about 1,300), with CJK punctuation, fullwidth forms and the marks (␃ ✓ ✗ ...): a page in the lab's words
  loads this one file (170 kB);
- then the rest in code point order, SLICE at a time (a poem a model writes loads the slices of its characters).

A slice's unicode-range runs over the code points the font lacks (a character no slice has falls back to the
system's fonts either way), which keeps fonts.css small (about 17 kB; ordering the rest by how often 唐诗 uses a
character would scatter every range, 76 kB). Each slice keeps the font's name table (family, copyright,
licence). fonts.css's @font-face rules are written between its BEGIN and END lines, from the slices' own
character maps. Run after tools/build_cjk_font.py or tools/font_marks.py change the OTF (both call it);
fontTools and brotli are build-time tools, as there:

    pip install --target /tmp/fontbuild brotli
    PYTHONPATH=/tmp/fontbuild python tools/web_font_slices.py
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "src" / "attnlab" / "web" / "static"
FONTS = STATIC / "fonts"
SOURCE = FONTS / "AttnlabCJK-Regular.otf"
FAMILY = "Attnlab CJK"
PREFIX = "AttnlabCJK-"  # slice k is fonts/AttnlabCJK-kk.woff2
SLICE = 500  # characters a slice after the first: about 90 kB of WOFF2
# What the pages ask the lab's font for (the rest of a page's text stays with the system's fonts): CJK, its
# punctuation and fullwidth forms, and the marks the lab prints (tools/font_marks.py draws those the source lacks).
SERVED = [
    (0x23CE, 0x23CE),
    (0x2400, 0x243F),
    (0x25A0, 0x25FF),
    (0x2700, 0x27BF),
    (0x2E80, 0x2FDF),
    (0x3000, 0x33FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0xFE30, 0xFE4F),
    (0xFF00, 0xFFEF),
    (0x20000, 0x2FA1F),
]
ALWAYS = [(0x3000, 0x303F), (0xFF00, 0xFFEF), *SERVED[:4]]  # punctuation, fullwidth forms, marks: in slice 00
LAB_WORDS = ("*.py", "*.json", "*.html", "*.js", "*.css")
BEGIN = "/* BEGIN web font slices: written by tools/web_font_slices.py, do not edit */"
END = "/* END web font slices */"


def served(code: int) -> bool:
    return any(lo <= code <= hi for lo, hi in SERVED)


def lab_words() -> set[int]:
    """Every character of the lab's source: what its pages can say in its own words."""
    chars: set[int] = set()
    for pattern in LAB_WORDS:
        for path in (ROOT / "src" / "attnlab").rglob(pattern):
            chars |= {ord(c) for c in path.read_text(encoding="utf-8", errors="ignore")}
    return chars


def plan(cmap: set[int], words: set[int]) -> list[list[int]]:
    """The slices, each a sorted list of code points: the lab's words first, then the rest by code point, SLICE
    at a time. Every served character of the font is in exactly one."""
    have = sorted(c for c in cmap if served(c))
    first = [c for c in have if c in words or any(lo <= c <= hi for lo, hi in ALWAYS)]
    taken = set(first)
    rest = [c for c in have if c not in taken]
    return [first, *(rest[i : i + SLICE] for i in range(0, len(rest), SLICE))]


def runs(points: list[int], have: list[int]) -> list[tuple[int, int]]:
    """The sorted code points as (first, last) runs, a run going on over code points the font lacks: `have` is
    every code point of the font, sorted, so a run never takes in a character of another slice, nor one the
    pages leave to the system's fonts (①, ★)."""
    place = {c: k for k, c in enumerate(have)}
    out: list[tuple[int, int]] = []
    for c in points:
        if out and place[c] == place[out[-1][1]] + 1:
            out[-1] = (out[-1][0], c)
        else:
            out.append((c, c))
    return out


def unicode_range(points: list[int], have: list[int]) -> str:
    return ", ".join(f"U+{a:X}" if a == b else f"U+{a:X}-{b:X}" for a, b in runs(points, have))


def css(slices: list[list[int]], cmap: set[int]) -> str:
    have = sorted(cmap)
    faces = []
    for k, points in enumerate(slices):
        faces.append(
            "@font-face {\n"
            f'  font-family: "{FAMILY}";\n'
            f'  src: url("fonts/{PREFIX}{k:02d}.woff2") format("woff2");\n'
            "  font-weight: 400;\n  font-style: normal;\n  font-display: swap;\n"
            f"  unicode-range: {unicode_range(points, have)};\n"
            "}"
        )
    return "\n".join([BEGIN, *faces, END])


def write(source: Path, slices: list[list[int]], out: Path) -> list[Path]:
    from fontTools import subset
    from fontTools.ttLib import TTFont

    for old in out.glob(f"{PREFIX}[0-9][0-9].woff2"):  # the slices of an earlier cut (and no other file)
        old.unlink()
    written = []
    for k, points in enumerate(slices):
        font = TTFont(source)
        options = subset.Options()
        options.layout_features = []
        options.hinting = False
        options.name_IDs = ["*"]
        options.name_languages = ["*"]
        options.notdef_outline = True
        options.flavor = "woff2"
        sub = subset.Subsetter(options)
        sub.populate(unicodes=points)
        sub.subset(font)
        path = out / f"{PREFIX}{k:02d}.woff2"
        font.flavor = "woff2"
        font.save(path)
        written.append(path)
    return written


def slice_font(source: Path = SOURCE, out: Path = FONTS) -> None:
    from fontTools.ttLib import TTFont

    try:
        import brotli  # noqa: F401 - fontTools writes WOFF2 with it
    except ImportError:
        sys.exit("install brotli first (see the docstring): fontTools writes WOFF2 with it")
    cmap = set(TTFont(source, lazy=True).getBestCmap())
    slices = plan(cmap, lab_words())
    files = write(source, slices, out)
    sheet = STATIC / "fonts.css"
    text = sheet.read_text(encoding="utf-8")
    block = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not block.search(text):
        sys.exit(f"{sheet} has no {BEGIN!r} ... {END!r} block to write the faces into")
    sheet.write_text(block.sub(lambda _: css(slices, cmap), text), encoding="utf-8")
    size = sum(p.stat().st_size for p in files)
    print(
        f"{len(files)} slices of {sum(map(len, slices))} characters ({len(slices[0])} in the lab's words, "
        f"{files[0].stat().st_size / 1024:.0f} kB), {size / 2**20:.2f} MiB in all; {sheet.name} rewritten"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--out", type=Path, default=FONTS)
    args = parser.parse_args()
    slice_font(args.source, args.out)


if __name__ == "__main__":
    main()

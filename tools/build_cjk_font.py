"""Build the lab's Chinese font: a subset of Noto Sans CJK SC (SIL OFL 1.1), so Chinese renders on a machine
with no Chinese font, in pages (a web font) and in figures (matplotlib reads the file). Run by a maintainer
when the lab's strings or corpora gain characters; the lab itself never runs it (fontTools and brotli are
build-time tools here, not dependencies).

    pip download mplfonts==0.0.11 --no-deps -d /tmp/fonts       # a PyPI wheel that carries the OTF
    pip install --target /tmp/fontbuild brotli                  # fontTools writes WOFF2 with brotli
    PYTHONPATH=/tmp/fontbuild python tools/build_cjk_font.py /tmp/fonts/mplfonts-0.0.11-py3-none-any.whl

The source is NotoSansCJKsc-Regular.otf (1.004; a path to it, or to a wheel or zip holding it). Only that file
is read: mplfonts also carries SimHei, which is not free and must never be shipped.

What the subset covers, and why (about 11,000 characters; 2.5 MB OTF; the pages get it as WOFF2 slices, 2 MB
in all, by tools/web_font_slices.py):
- GB2312 (6,763 hanzi and its symbols): the characters of everyday simplified Chinese, so a learner's own
  text (a toy query, a prompt) almost always renders;
- every character of the corpora in ../shared/data (唐诗三百首 and the 全唐诗 slice, traditional and simplified),
  so whatever a model trained on them writes renders;
- every character of the lab's own strings, templates, notebook and docs;
- CJK punctuation and fullwidth forms, and ASCII (so the file also works on its own).
Marks the lab prints that the source lacks (␃, ✗, ...) are drawn by tools/font_marks.py and added after subsetting.
The whole CJK block (about 21,000 hanzi) would double the size (5 MB OTF, 3.6 MB WOFF2) for characters
that none of the lab's texts use; a character outside the subset falls back to the system's fonts in a page
and gives one warning in a figure (attnlab.display.fonts).

The family is renamed "Attnlab CJK" (the OFL asks a modified font not to pretend to be the original; the
upstream's reserved name, "Source", is not used). Copyright and license stay in the name table, and OFL.txt
sits beside the files.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import zipfile
from pathlib import Path

from font_marks import add_marks  # beside this file: run as a script, tools/ is on the path
from web_font_slices import slice_font

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "attnlab" / "web" / "static" / "fonts"
CORPORA = Path(os.environ.get("ATTNLAB_DATA") or ROOT.parent / "shared" / "data")  # as tests/shared_data.py
LAB_TEXTS = [
    (ROOT / "src" / "attnlab", ("*.py", "*.json", "*.html", "*.js", "*.css")),
    (ROOT / "examples", ("*.ipynb", "*.py")),
    (ROOT / "docs", ("*.md",)),
    (ROOT, ("README.md",)),
]
SOURCE_NAME = "NotoSansCJKsc-Regular.otf"
FAMILY, POSTSCRIPT = "Attnlab CJK", "AttnlabCJK-Regular"
RANGES = [(0x20, 0x7E), (0x3000, 0x303F), (0xFF00, 0xFFEF)]  # ASCII, CJK punctuation, fullwidth forms


def gb2312() -> set[str]:
    """Every character GB2312 encodes (its two-byte rows A1-F7)."""
    chars = set()
    for hi in range(0xA1, 0xF8):
        for lo in range(0xA1, 0xFF):
            try:
                chars.add(bytes([hi, lo]).decode("gb2312"))
            except UnicodeDecodeError:
                pass
    return chars


def text_chars(folder: Path, patterns) -> set[str]:
    chars: set[str] = set()
    for pattern in patterns:
        for path in sorted(folder.rglob(pattern) if folder != ROOT else folder.glob(pattern)):
            chars |= set(path.read_text(encoding="utf-8", errors="ignore"))
    return chars


def wanted(corpora: Path) -> set[str]:
    if not corpora.is_dir():
        sys.exit(f"no corpora at {corpora}: pass --corpora (the subset must cover what the models can write)")
    chars = gb2312() | text_chars(corpora, ("*.json", "*.txt"))
    for folder, patterns in LAB_TEXTS:
        if folder.exists():
            chars |= text_chars(folder, patterns)
    for lo, hi in RANGES:
        chars |= {chr(c) for c in range(lo, hi + 1)}
    return {c for c in chars if ord(c) >= 0x20}


def source_bytes(path: Path) -> bytes:
    if path.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(path) as z:
            name = next(n for n in z.namelist() if n.endswith("/" + SOURCE_NAME))
            return z.read(name)
    if path.name != SOURCE_NAME:
        sys.exit(f"expected {SOURCE_NAME} (or a wheel holding it), got {path.name}")
    return path.read_bytes()


def rename(font) -> None:
    """The subset's own name in the name table and in the CFF table; copyright and license records stay."""
    name = font["name"]
    name.names = [r for r in name.names if r.nameID not in (1, 2, 3, 4, 6, 16, 17, 18, 21, 22)]
    for name_id, text in (
        (1, FAMILY),
        (2, "Regular"),
        (3, f"{POSTSCRIPT};attnlab subset"),
        (4, f"{FAMILY} Regular"),
        (6, POSTSCRIPT),
        (
            10,
            "A subset of Noto Sans CJK SC 1.004 for attnlab (GB2312, the lab's corpora and "
            "strings), renamed; SIL Open Font License 1.1.",
        ),
    ):
        name.setName(text, name_id, 3, 1, 0x409)
    cff = font["CFF "].cff
    cff.fontNames = [POSTSCRIPT]
    top = cff.topDictIndex[0]
    for key, value in (("FamilyName", FAMILY), ("FullName", f"{FAMILY} Regular")):
        if hasattr(top, key):
            setattr(top, key, value)


def build(source: Path, corpora: Path, out: Path) -> None:
    from fontTools import subset
    from fontTools.ttLib import TTFont

    font = TTFont(io.BytesIO(source_bytes(source)))
    cmap = font.getBestCmap()
    chars = wanted(corpora)
    have = sorted(ord(c) for c in chars if ord(c) in cmap)
    options = subset.Options()
    options.layout_features = []  # no vertical forms nor other locales' variants: the pages are horizontal SC
    options.hinting = False  # 15% smaller; matplotlib autohints anyway, and browsers do well without CFF hints
    options.name_IDs = ["*"]
    options.name_languages = ["*"]
    options.notdef_outline = True
    options.drop_tables += ["DSIG"]
    sub = subset.Subsetter(options)
    sub.populate(unicodes=have)
    sub.subset(font)
    rename(font)
    marks = add_marks(font)  # ␃ ✗ and the other marks the lab prints that the source lacks (font_marks.py)
    out.mkdir(parents=True, exist_ok=True)
    font.flavor = None
    font.save(out / f"{POSTSCRIPT}.otf")
    slice_font(out / f"{POSTSCRIPT}.otf", out)  # the pages' web font: WOFF2 slices and fonts.css's faces
    lost = sorted(c for c in chars if ord(c) not in cmap and c.isprintable() and ord(c) > 0x7F)
    print(
        f"{len(have)} characters ({len(lost)} asked for are not in the source font), {len(marks)} marks drawn;",
        f"{POSTSCRIPT}.otf {(out / f'{POSTSCRIPT}.otf').stat().st_size / 2**20:.2f} MiB",
    )
    if not (out / "OFL.txt").exists():
        print("warning: OFL.txt is missing beside the fonts; the license must ship with them", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help=f"{SOURCE_NAME}, or a wheel/zip that holds it (mplfonts)")
    parser.add_argument("--corpora", type=Path, default=CORPORA, help="folder of the corpora to cover")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    build(args.source, args.corpora, args.out)


if __name__ == "__main__":
    main()

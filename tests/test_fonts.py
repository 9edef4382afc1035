"""Chinese in figures on a machine with no Chinese font (issue 22, item 2), and the lab's font file itself.

The figure checks run in a subprocess that sees no system font at all: an empty fontconfig, a fresh
MPLCONFIGDIR, and matplotlib's font list cut down to the fonts matplotlib ships (it also scans font folders
itself, not only through fontconfig). That is a fresh Debian/Docker/Colab machine, and also a machine whose
font cache predates an installed Chinese font. The page checks are in tests/browser/test_font.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from shared_data import data_dir

ROOT = Path(__file__).resolve().parents[1]
FONTS = ROOT / "src" / "attnlab" / "web" / "static" / "fonts"
FONT_FILE = FONTS / "AttnlabCJK-Regular.otf"
STATIC = ROOT / "src" / "attnlab" / "web" / "static"
CJK = re.compile(r"[\u2e80-\u2fdf\u3000-\u33ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]")
OUTSIDE = "한글"  # Hangul: in neither the lab's subset nor DejaVu Sans

NO_FONTS_CONF = """<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><cachedir>{cache}</cachedir></fontconfig>
"""

SCRIPT = r"""
import io, json, sys, warnings
from pathlib import Path
import matplotlib
from matplotlib import font_manager
from matplotlib.text import Text

shipped = str(Path(matplotlib.get_data_path()).resolve())
font_manager.fontManager.ttflist = [f for f in font_manager.fontManager.ttflist
                                    if str(Path(f.fname).resolve()).startswith(shipped)]
font_manager.fontManager._findfont_cached.cache_clear()

from attnlab.lessons.common import figure
from attnlab.lessons.explain import TOPICS

system_cjk_font = getattr(figure, "system_cjk_font", figure.cjk_font)  # cjk_font before the lab had a font
out = {"system_cjk": system_cjk_font(), "families": None}
topic = TOPICS["glossary"]  # a real lesson figure: Chinese title, labels and the poem's characters
result = topic.run(lang="zh")
drawn = []

def plot(r, fig, tr):
    topic.piece("figure").plot(r, fig, tr)
    drawn.append(fig)
    out["families"] = list(matplotlib.rcParams["font.family"])  # inside save's rc_context

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    figure.save(plot, result, io.BytesIO(), lang="zh")
out["texts"] = [t.get_text() for t in drawn[0].findobj(Text)]
out["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
prop = font_manager.FontProperties(family=out["families"])
out["files"] = [str(Path(p).resolve()) for p in font_manager.fontManager._find_fonts_by_props(prop)]
out["charmap"] = sorted(font_manager.get_font(sys.argv[2]).get_charmap())

def outside(r, fig, tr):
    fig.text(0.5, 0.5, "猫 " + sys.argv[1], fontsize=20)

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for _ in range(2):  # the same missing characters twice: still one warning
        figure.save(outside, None, io.BytesIO(), lang="en")
out["outside"] = [f"{w.category.__name__}: {w.message}" for w in caught]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    """What the lab draws where no font but matplotlib's own is found (one subprocess for the module)."""
    tmp = tmp_path_factory.mktemp("no-fonts")
    conf = tmp / "fonts.conf"
    conf.write_text(NO_FONTS_CONF.format(cache=tmp / "fc-cache"))
    env = {**os.environ, "FONTCONFIG_FILE": str(conf), "MPLCONFIGDIR": str(tmp / "mpl"), "MPLBACKEND": "Agg"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, OUTSIDE, str(FONT_FILE)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # starts a process with no system font
def test_a_lesson_figure_draws_chinese_in_the_lab_font_with_no_system_font(bare):
    assert bare["system_cjk"] is None, "the subprocess was meant to see no Chinese font of the system"
    text = "".join(bare["texts"])
    chinese = set(CJK.findall(text))
    assert "床" in chinese and len(chinese) > 5, f"the figure's labels should be Chinese, got {bare['texts']}"
    assert bare["warnings"] == [], "no glyph may be missing (matplotlib warns per glyph)"
    assert str(FONT_FILE) in bare["files"], f"the lab's font should follow DejaVu Sans: {bare['families']}"
    assert {ord(c) for c in chinese} <= set(bare["charmap"])


def test_a_character_outside_the_fonts_warns_once_naming_it(bare):
    assert len(bare["outside"]) == 1, bare["outside"]
    assert bare["outside"][0].startswith("MissingGlyphWarning: ")
    assert all(c in bare["outside"][0] for c in OUTSIDE) and "猫" not in bare["outside"][0]
    assert "drawn as boxes" in bare["outside"][0]  # lang="en": the lab's English message


# ---- the font file and what it covers (no subprocess) --------------------------------------------------


def _cmap(path: Path) -> set[int]:
    from fontTools.ttLib import TTFont

    return set(TTFont(path, lazy=True).getBestCmap())


def test_the_font_ships_with_its_license_under_its_own_name():
    from fontTools.ttLib import TTFont

    from attnlab.display import fonts

    font = TTFont(fonts.FONT_FILE, lazy=True)
    names = {r.nameID: r.toUnicode() for r in font["name"].names if r.platformID == 3}
    assert names[1] == fonts.FAMILY and "Noto" not in names[1] and "Source" not in names[1]
    assert "Open Font License" in names[13] and "Adobe" in names[0]
    assert "SIL OPEN FONT LICENSE" in (FONTS / "OFL.txt").read_text(encoding="utf-8")
    for path in slices():  # the pages' web font: each slice carries the same names and licence
        assert path.read_bytes()[:4] == b"wOF2", path.name
        sliced = {r.nameID: r.toUnicode() for r in TTFont(path)["name"].names if r.platformID == 3}
        assert sliced[1] == fonts.FAMILY and sliced[13] == names[13] and sliced[0] == names[0], path.name
    assert not list(FONTS.glob("*SimHei*")) and not list(FONTS.glob("*.ttf"))
    assert not (FONTS / "AttnlabCJK-Regular.woff2").exists()  # the whole font as one WOFF2 is no longer served


def test_the_font_covers_gb2312_the_lab_strings_and_the_corpora():
    """A failure names the characters: rebuild with tools/build_cjk_font.py (its docstring says how)."""
    from attnlab.display import fonts
    from attnlab.i18n import catalog

    have = _cmap(fonts.FONT_FILE)
    wanted = {c for texts in catalog().values() for c in CJK.findall(texts["zh"] + texts["en"])}
    wanted |= _gb2312_hanzi()
    corpora = data_dir() / "chinese-poetry"
    if corpora.is_dir():
        for path in sorted(corpora.rglob("*.json")):
            wanted |= set(CJK.findall(path.read_text(encoding="utf-8")))
    missing = "".join(sorted(c for c in wanted if ord(c) not in have))
    assert not missing, f"not in the lab's font (run tools/build_cjk_font.py): {missing[:80]}"


def _gb2312_hanzi() -> set[str]:
    chars = set()
    for hi in range(0xB0, 0xF8):
        for lo in range(0xA1, 0xFF):
            try:
                chars.add(bytes([hi, lo]).decode("gb2312"))
            except UnicodeDecodeError:
                pass
    return chars


def test_the_pages_font_stacks_are_lab_css_with_the_lab_font_first():
    """fonts.css re-declares lab.css's --sans and --mono with "Attnlab CJK" first; they must not drift."""

    def stacks(css: str) -> dict[str, str]:
        return {k: " ".join(v.split()) for k, v in re.findall(r"(--sans|--mono):\s*([^;]+);", css)}

    lab = stacks((STATIC / "lab.css").read_text(encoding="utf-8"))
    ours = stacks((STATIC / "fonts.css").read_text(encoding="utf-8"))
    assert set(lab) == set(ours) == {"--sans", "--mono"}
    for key in lab:
        assert ours[key] == '"Attnlab CJK", ' + lab[key], f"fonts.css's {key} no longer matches lab.css's"
    assert 'url("fonts/AttnlabCJK-00.woff2")' in (STATIC / "fonts.css").read_text(encoding="utf-8")


# ---- the web font's slices (tools/web_font_slices.py) ------------------------------------------------------

FACE = re.compile(r'@font-face\s*\{[^}]*?url\("fonts/([^"]+)"\)[^}]*?unicode-range:\s*([^;]+);', re.S)


def slices() -> list[Path]:
    return sorted(FONTS.glob("AttnlabCJK-[0-9][0-9].woff2"))


def faces() -> list[tuple[str, list[tuple[int, int]]]]:
    """fonts.css's @font-face rules: (file, [(first, last) code point ranges])."""
    out = []
    for name, ranges in FACE.findall((STATIC / "fonts.css").read_text(encoding="utf-8")):
        spans = []
        for part in ranges.split(","):
            lo, _, hi = part.strip().removeprefix("U+").partition("-")
            spans.append((int(lo, 16), int(hi or lo, 16)))
        out.append((name, spans))
    return out


def test_the_web_font_is_the_lab_font_cut_into_slices_without_loss():
    """Each face of fonts.css is one slice on disk; the slices hold exactly the characters of the lab's font the
    pages use it for, each in one slice, drawn alike, and each inside its face's unicode-range, the ranges
    disjoint: a character is fetched from the one slice that has it."""
    from fontTools.ttLib import TTFont

    from attnlab.display import fonts

    listed = faces()
    assert [name for name, _ in listed] == [p.name for p in slices()] and len(listed) > 1
    otf = TTFont(fonts.FONT_FILE, lazy=True)
    full, widths = otf.getBestCmap(), otf["hmtx"].metrics
    covered = [(lo, hi) for _, spans in listed for lo, hi in spans]
    served = {c for c in full if any(lo <= c <= hi for lo, hi in covered)}
    seen: set[int] = set()
    for (name, spans), path in zip(listed, slices()):
        font = TTFont(path)
        cmap = font.getBestCmap()
        assert not seen & set(cmap), f"{name}: characters also in an earlier slice"
        seen |= set(cmap)
        assert all(any(lo <= c <= hi for lo, hi in spans) for c in cmap), f"{name}: a character outside its range"
        for c in list(cmap)[:: max(1, len(cmap) // 50)]:  # the same glyphs: the same advance as in the OTF
            assert font["hmtx"].metrics[cmap[c]] == widths[full[c]], (name, hex(c))
    assert seen == served and len(seen) > 10_000
    spans = sorted(covered)
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:])), "two faces share a code point"
    for c in "猫追老鼠它床前明月光，。␃✓✗":
        assert ord(c) in served, c


def test_a_page_in_the_labs_words_needs_the_first_slice_only():
    """Every Chinese character of the catalog and the templates is in slice 00, so a page in the lab's own words
    fetches one small file (tests/browser/test_font.py sees it). A failure names the characters: run
    tools/web_font_slices.py (its docstring says how)."""
    from fontTools.ttLib import TTFont

    from attnlab.i18n import catalog

    first = set(TTFont(slices()[0]).getBestCmap())
    words = {c for texts in catalog().values() for c in CJK.findall(texts["zh"] + texts["en"])}
    for path in (ROOT / "src" / "attnlab").rglob("*.html"):
        words |= set(CJK.findall(path.read_text(encoding="utf-8")))
    missing = "".join(sorted(c for c in words if ord(c) not in first))
    assert not missing, f"not in the first web font slice (run tools/web_font_slices.py): {missing[:80]}"
    assert slices()[0].stat().st_size < 300_000  # a small file, beside the 1.9 MB of the whole font


# The blocks the lab's marks come from (not prose): Control Pictures (␃ ␣), the return symbol ⏎, geometric shapes
# (▸ ▾ ●) and dingbats (✓ ✗ ✔ ✝). Noto Sans CJK lacks several; tools/font_marks.py draws those into the font.
MARK_BLOCKS = [(0x2400, 0x243F), (0x23CE, 0x23CE), (0x25A0, 0x25FF), (0x2700, 0x27BF)]


def lab_marks() -> dict[str, str]:
    """Every mark character in the lab's source (Python, templates, scripts, styles, strings) -> a file using it."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "src" / "attnlab").rglob("*")):
        if path.suffix in (".py", ".html", ".js", ".css", ".json"):
            for c in path.read_text(encoding="utf-8", errors="ignore"):
                if any(lo <= ord(c) <= hi for lo, hi in MARK_BLOCKS):
                    found.setdefault(c, str(path.relative_to(ROOT)))
    return found


def test_every_mark_the_lab_prints_is_in_the_font():
    """␃ (the end-of-text token), ⏎ ␣, ✓ ✗ and the rest are drawn by the lab's font, not left to a system font
    that may not have them (a box). A failure names the characters: add them to tools/font_marks.py and run it."""
    from fontTools.pens.boundsPen import BoundsPen
    from fontTools.ttLib import TTFont

    marks = lab_marks()
    assert {"␃", "⏎", "␣", "✓", "✗"} <= set(marks), "the scan should see the token and claim marks"
    font = TTFont(FONT_FILE, lazy=True)
    have = set(font.getBestCmap())
    missing = {c: path for c, path in marks.items() if ord(c) not in have}
    assert not missing, f"not in the lab's font (tools/font_marks.py): {missing}"
    glyphs, cmap = font.getGlyphSet(), font.getBestCmap()
    for c in "␃⏎␣✗":  # drawn, with an advance: not an empty glyph mapped to the code point
        glyph = glyphs[cmap[ord(c)]]
        assert glyph.width > 300 and glyph.width == font["hmtx"][cmap[ord(c)]][0]
        pen = BoundsPen(glyphs)
        glyph.draw(pen)
        assert pen.bounds is not None and pen.bounds[2] - pen.bounds[0] > 200, c


def test_the_pages_take_every_mark_from_the_lab_font():
    """fonts.css gives the web font a unicode-range (only what needs it downloads it): every mark is inside it."""
    css = (STATIC / "fonts.css").read_text(encoding="utf-8")
    ranges = []
    for part in re.search(r"unicode-range:\s*(U\+[^;]+);", css).group(1).split(","):
        lo, _, hi = part.strip().removeprefix("U+").partition("-")
        ranges.append((int(lo, 16), int(hi or lo, 16)))
    outside = {c: path for c, path in lab_marks().items() if not any(lo <= ord(c) <= hi for lo, hi in ranges)}
    assert not outside, f"add them to fonts.css's unicode-range: {outside}"

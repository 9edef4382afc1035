"""The regular Tang forms (近体诗) read from a poem's lines: 五言/七言 × 绝句/律诗.

A verse (句) is the run of characters before a mark: "，" ends the first verse of a couplet, "。" (or "？",
"！") the second. A 五绝 (wujue) is 4 verses of 5 characters, a 七绝 (qijue) 4 of 7, a 五律 (wulv) 8 of 5,
a 七律 (qilv) 8 of 7 — with punctuation and a line break after each couplet a 七律 is 4 × 16 + 3 = 67
characters. Only line lengths and counts are checked, not tones or rhyme.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FORMS: dict[str, tuple[int, int]] = {  # name -> (verses, characters per verse)
    "wujue": (4, 5),  # 五言绝句
    "qijue": (4, 7),  # 七言绝句
    "wulv": (8, 5),  # 五言律诗
    "qilv": (8, 7),  # 七言律诗
}
FORM_NAMES_ZH = {"wujue": "五言绝句", "qijue": "七言绝句", "wulv": "五言律诗", "qilv": "七言律诗"}
MID, END = "，", "。？！"  # the mark after a couplet's first verse; the marks that may close a couplet
_MARKS = MID + END + "、；：,.;:!?"  # anything that ends a verse when counting positions
_COUPLET = re.compile(rf"([^{_MARKS}\s]+){MID}([^{_MARKS}\s]+)[{END}]")


def parse_forms(spec: str | None) -> tuple[str, ...] | None:
    """'wujue,qilv' -> ('wujue', 'qilv'); 'regular' -> all four; None or 'all' -> None (every poem)."""
    if spec is None or spec.strip() in ("", "all"):
        return None
    names = [s.strip() for s in spec.split(",") if s.strip()]
    out: list[str] = []
    for name in names:
        if name == "regular":
            out += list(FORMS)
        elif name in FORMS:
            out.append(name)
        else:
            raise ValueError(f"unknown form {name!r}; choose from {', '.join(FORMS)}, regular (all four) or all")
    return tuple(dict.fromkeys(out))


def verses(poem: str) -> list[str] | None:
    """The verses of a poem written as couplets "xxxxx，xxxxx。" (one or more per line), or None when any line
    is not made of such couplets (a stray mark, a missing one, text outside a couplet)."""
    found: list[str] = []
    for line in poem.split("\n"):
        line = line.strip()
        if not line:
            continue
        matches = list(_COUPLET.finditer(line))
        if not matches or "".join(m.group(0) for m in matches) != line:
            return None
        for m in matches:
            found += [m.group(1), m.group(2)]
    return found or None


def classify(poem: str) -> str | None:
    """The poem's regular form ('wujue', 'qijue', 'wulv', 'qilv') or None."""
    vs = verses(poem)
    if vs is None:
        return None
    lengths = {len(v) for v in vs}
    if len(lengths) != 1:
        return None
    n = lengths.pop()
    return next((name for name, shape in FORMS.items() if shape == (len(vs), n)), None)


def complete_verses(text: str) -> int:
    """How many verses of `text` are finished (closed by a mark): a form's generation stops at its count."""
    return sum(1 for ch in text if ch in MID + END)


@dataclass
class Position:
    verse: int  # 1-based: which verse (句) the next character belongs to
    char: int  # 1-based: its place in that verse


def position(text: str) -> Position:
    """Where the next character of a poem being written goes: verse and place, counted from the marks so far."""
    verse, char = 1, 1
    for ch in text:
        if ch in _MARKS:
            verse, char = verse + 1, 1
        elif ch == "\n":
            continue
        else:
            char += 1
    return Position(verse, char)


def copied_verses(poems: list[str], training: list[str], length: int = 5) -> tuple[int, int]:
    """(verses of `length` characters in `poems` that appear verbatim as a verse of a training poem, all such
    verses): memorization, counted by whole verses."""
    known = {v for p in training for v in _all_verses(p) if len(v) == length}
    made = [v for p in poems for v in _all_verses(p) if len(v) == length]
    return sum(v in known for v in made), len(made)


def _all_verses(poem: str) -> list[str]:
    return [v for v in re.split(rf"[{_MARKS}\s]+", poem) if v]


def longest_copied_span(poem: str, training_text: str) -> str:
    """The longest run of `poem` (marks included) found verbatim in `training_text` (two pointers: a run
    found at i..j is extended while it is still found, else its start moves on)."""
    best, i, j = "", 0, 0
    while j < len(poem):
        if poem[i : j + 1] in training_text:
            j += 1
            if j - i > len(best):
                best = poem[i:j]
        else:
            i += 1
            j = max(j, i)
    return best

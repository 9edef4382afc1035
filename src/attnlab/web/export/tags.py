"""A page's start tags with their places in the text (and its <script> spans), for rewriting a page of the
static copy without touching the templates; the site (`site`) and its states (`states`) both read them.

The scan reads what Python's html.parser reads, with its own patterns for a start tag, an attribute and an end
tag, but jumps from one '<' to the next instead of handing every piece of text to a handler: the export reads
each of its 500-odd pages (24 MB) this way, twice. A page with markup the jump does not follow (a marked section
<![...]>, an unfinished tag) is read by html.parser itself (`Tags.parsed`); tests/test_export_tags.py checks the
two agree on every page the lab renders and on generated markup."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from html import unescape
from html.parser import (
    HTMLParser,
    attrfind_tolerant,
    endtagfind,
    locatestarttagend_tolerant,
    tagfind_tolerant,
)

MARKUP = re.compile(r"<(?:([a-zA-Z])|(/)|(!--)|(!|\?))")
COMMENT_CLOSE = re.compile(r"--\s*>")
RAW_TEXT = ("script", "style")  # html.parser's CDATA_CONTENT_ELEMENTS: no markup inside until their end tag
RAW_END = {name: re.compile(rf"</\s*{name}\s*>", re.I) for name in RAW_TEXT}  # html.parser's set_cdata_mode
CLOSED_BY = ("button", "label")  # elements whose end tag a reader asks for (Tags.closes)


@dataclass
class Tag:
    name: str
    attrs: list[tuple[str, str | None]]
    start: int
    end: int
    closed: bool  # written as <x ... />


class Unusual(Exception):
    """Markup the scan does not follow: html.parser reads the page."""


@dataclass
class Tags:
    """Every start tag with its place in the text, every end tag, and the spans of <script> elements."""

    tags: list[Tag] = field(default_factory=list)
    ends: list[tuple[str, int, int]] = field(default_factory=list)  # every end tag: (name, start, end)
    closes: dict[int, tuple[int, int]] = field(default_factory=dict)  # a <button>/<label>'s start -> its end tag
    scripts: list[tuple[int, int]] = field(default_factory=list)
    _script_at: int | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, text: str) -> Tags:
        try:
            return cls.scanned(text)
        except Unusual:
            return cls.parsed(text)

    @classmethod
    def scanned(cls, text: str) -> Tags:
        out, open_ = cls(), {name: [] for name in CLOSED_BY}
        i = 0
        while (m := MARKUP.search(text, i)) is not None:
            i = m.start()
            if m.group(1):  # a start tag
                i = out._start(text, i, open_)
            elif m.group(2):  # an end tag
                i = out._end(text, i, open_)
            elif m.group(3):  # a comment
                close = COMMENT_CLOSE.search(text, i + 4)
                if close is None:
                    raise Unusual
                i = close.end()
            else:  # <!DOCTYPE ...>, a bogus comment or a processing instruction: up to the next '>'
                if text.startswith("<![", i):
                    raise Unusual
                gt = text.find(">", i + 2)
                if gt < 0:
                    raise Unusual
                i = gt + 1
        return out

    def _start(self, text: str, i: int, open_: dict) -> int:
        located = locatestarttagend_tolerant.match(text, i)
        j = located.end()
        if text.startswith(">", j):
            endpos = j + 1
        elif text.startswith("/>", j):
            endpos = j + 2
        else:
            raise Unusual  # unfinished, or bogus input html.parser reads as text
        name_match = tagfind_tolerant.match(text, i + 1)
        name, k = name_match.group(1).lower(), name_match.end()
        attrs: list[tuple[str, str | None]] = []
        while k < endpos:
            a = attrfind_tolerant.match(text, k)
            if not a:
                break
            attr, rest, value = a.group(1, 2, 3)
            if not rest:
                value = None
            elif value[:1] == "'" == value[-1:] or value[:1] == '"' == value[-1:]:
                value = value[1:-1]
            if value:
                value = unescape(value)
            attrs.append((attr.lower(), value))
            k = a.end()
        end = text[k:endpos].strip()
        if end not in (">", "/>"):
            raise Unusual
        written_closed = text[i:endpos].endswith("/>")  # what Tag.closed and the readers go by
        self.tags.append(Tag(name, attrs, i, endpos, written_closed))
        if name == "script":
            self._script_at = i
        if name in open_ and not written_closed:
            open_[name].append(i)
        if end == "/>" or name not in RAW_TEXT:  # (<x/> opens nothing, as html.parser reads it)
            return endpos
        close = RAW_END[name].search(text, endpos)  # raw text: no markup up to here
        if close is None:
            raise Unusual
        self._ended(name, close.start(), close.end(), open_)
        return close.end()

    def _end(self, text: str, i: int, open_: dict) -> int:
        gt = text.find(">", i + 1)
        if gt < 0:
            raise Unusual
        found = endtagfind.match(text, i)
        if found:
            name, after = found.group(1).lower(), gt + 1
        else:
            name_match = tagfind_tolerant.match(text, i + 2)
            if not name_match:
                raise Unusual  # </> or a bogus comment
            name = name_match.group(1).lower()
            after = text.find(">", name_match.end()) + 1
        self._ended(name, i, gt + 1, open_)
        return after

    def _ended(self, name: str, start: int, end: int, open_: dict) -> None:
        self.ends.append((name, start, end))
        if open_.get(name):
            self.closes[open_[name].pop()] = (start, end)
        if name == "script" and self._script_at is not None:
            self.scripts.append((self._script_at, end))
            self._script_at = None

    @classmethod
    def parsed(cls, text: str) -> Tags:
        """The same, read by html.parser (the reference the scan agrees with)."""
        reader = _Reader(text)
        return cls(reader.tags, reader.ends, reader.closes, reader.scripts)


class _Reader(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.lines = [0]
        for line in text.splitlines(keepends=True):
            self.lines.append(self.lines[-1] + len(line))
        self.tags: list[Tag] = []
        self.ends: list[tuple[str, int, int]] = []
        self.closes: dict[int, tuple[int, int]] = {}
        self._open: dict[str, list[int]] = {name: [] for name in CLOSED_BY}
        self.scripts: list[tuple[int, int]] = []
        self._script_at: int | None = None
        self._text = text
        self.feed(text)
        self.close()

    def _offset(self) -> int:
        line, col = self.getpos()
        return self.lines[line - 1] + col

    def handle_starttag(self, tag, attrs):
        raw = self.get_starttag_text() or ""
        start = self._offset()
        self.tags.append(Tag(tag, list(attrs), start, start + len(raw), raw.endswith("/>")))
        if tag == "script":
            self._script_at = start
        if tag in self._open and not raw.endswith("/>"):
            self._open[tag].append(start)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        start = self._offset()
        end = self._text.find(">", start) + 1
        self.ends.append((tag, start, end))
        if self._open.get(tag):
            self.closes[self._open[tag].pop()] = (start, end)
        if tag == "script" and self._script_at is not None:
            self.scripts.append((self._script_at, end))
            self._script_at = None


@lru_cache(maxsize=4)
def tags_of(text: str) -> Tags:
    """Tags.of(text), read once for the several readers of one page (its forms, links and sections); read only."""
    return Tags.of(text)

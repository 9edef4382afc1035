"""A page's start tags with their places in the text (and its <script> spans), for rewriting a page of the
static copy without touching the templates; the site (`site`) and its states (`states`) both read them."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from html.parser import HTMLParser


@dataclass
class Tag:
    name: str
    attrs: list[tuple[str, str | None]]
    start: int
    end: int
    closed: bool  # written as <x ... />


class Tags(HTMLParser):
    """Every start tag with its place in the text, and the spans of <script> elements."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.lines = [0]
        for line in text.splitlines(keepends=True):
            self.lines.append(self.lines[-1] + len(line))
        self.tags: list[Tag] = []
        self.ends: list[tuple[str, int, int]] = []  # every end tag: (name, start, end)
        self.closes: dict[int, tuple[int, int]] = {}  # a <button>/<label>'s start -> the span of its end tag
        self._open: dict[str, list[int]] = {"button": [], "label": []}
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
            end = self._text.index(">", self._offset()) + 1
            self.scripts.append((self._script_at, end))
            self._script_at = None


@lru_cache(maxsize=4)
def tags_of(text: str) -> Tags:
    """Tags(text), parsed once for the several readers of one page (its forms, links and sections); read only."""
    return Tags(text)

"""Reading corpora: plain .txt, and the chinese-poetry JSON layouts, as a list of texts (one per poem).

Two JSON layouts are read: the 全唐诗 array of {author, title, paragraphs}, and the nested 蒙学 layout
{title, content: [{type, content: [{chapter, author, paragraphs}]}]}. Both are walked the same way: every
object with a "paragraphs" list is one poem. Editors' notes inside the lines are stripped:
variant readings such as "(明年 一作：年年)" or "（一作「叉」）" (some run across two paragraphs), and the
brackets of restored characters ("[爽]" -> "爽").
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from attnlab.io import safe_read
from attnlab.text.builtin import BUILTIN_TEXTS

CORPUS_LIMIT = 1024 * safe_read.MiB  # bytes: a corpus file is read whole; larger ones are refused, never blocked on

_NOTE = re.compile(r"[（(][^（()）]*[）)]")  # a parenthesised note; [^...] also spans a line break
_RESTORED = re.compile(r"\[([^\[\]]*)\]")  # [爽] -> 爽


def strip_notes(text: str) -> str:
    """Remove editors' notes from a poem's text, then blank lines and stray spaces."""
    text = _NOTE.sub("", text)
    text = _RESTORED.sub(r"\1", text)
    lines = (line.strip() for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def _poems(node) -> list[list[str]]:
    """Every "paragraphs" list in a JSON tree, in document order."""
    if isinstance(node, dict):
        if isinstance(node.get("paragraphs"), list):
            return [[p for p in node["paragraphs"] if isinstance(p, str)]]
        return [poem for value in node.values() for poem in _poems(value)]
    if isinstance(node, list):
        return [poem for item in node for poem in _poems(item)]
    return []


def read_poems_json(path: str | Path) -> list[str]:
    """One text per poem (its lines joined by newlines, notes stripped) from a chinese-poetry JSON file."""
    path = Path(path)
    try:
        data = safe_read.read_json(path, limit=CORPUS_LIMIT)  # a regular file, bounded: never blocks on a FIFO
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON ({e})") from None
    poems = [strip_notes("\n".join(paragraphs)) for paragraphs in _poems(data)]
    poems = [p for p in poems if p]
    if not poems:
        raise ValueError(f"{path} holds no poems: expected objects with a 'paragraphs' list of strings")
    return poems


def read_corpus(name_or_path: str | Path) -> list[str]:
    """The texts to train on: a built-in name ('poem', 'jingyesi'), a .txt file, or a .json poetry file."""
    if isinstance(name_or_path, str) and name_or_path in BUILTIN_TEXTS:
        return [BUILTIN_TEXTS[name_or_path]]
    path = Path(name_or_path)
    if not path.exists():
        raise ValueError(
            f"corpus {str(name_or_path)!r} is neither a built-in text {sorted(BUILTIN_TEXTS)} nor an existing file"
        )
    if path.is_dir():
        raise ValueError(f"corpus {path} is a directory; give one .txt or .json file")
    try:
        if path.suffix.lower() == ".json":
            return read_poems_json(path)
        text = safe_read.read_text(path, CORPUS_LIMIT)
    except UnicodeDecodeError:
        raise ValueError(f"corpus {path} is not UTF-8 text") from None
    if not text.strip():
        raise ValueError(f"corpus {path} is empty")
    return [text]


def shuffled_chars(texts: list[str], seed: int) -> list[str]:
    """The same characters in a random order, each text keeping its length: every character's count stays, every
    order goes. What training learns from the order, a model trained on this cannot (the strongest null of a claim
    about what training learned; lessons/common/nulls.py)."""
    import random

    chars = [ch for text in texts for ch in text]
    random.Random(seed).shuffle(chars)
    out, start = [], 0
    for text in texts:
        out.append("".join(chars[start : start + len(text)]))
        start += len(text)
    return out

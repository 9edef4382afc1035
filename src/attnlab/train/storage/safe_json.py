"""Reading a checkpoint's JSON files (config.json, tokenizer.json, train_state.json) with bounds, before parsing.

json.loads recurses once per nesting level: a file of 100,000 '[' raises RecursionError (or, in a thread with
a small stack, worse) instead of a ValueError. So the size is capped (generously: attnlab writes a few kB, a
big BPE tokenizer a few MB) and the nesting is counted by a cheap scan that skips strings, before json.loads
sees the text. A file that is not a regular one (a FIFO, /dev/zero through a link) is refused without
blocking on it.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

MiB = 2**20
LIMITS = {"config.json": 16 * MiB, "tokenizer.json": 64 * MiB, "train_state.json": 64 * MiB}  # bytes, by kind
DEFAULT_LIMIT = 16 * MiB
MAX_DEPTH = 64  # attnlab's own files nest fewer than 10 levels; json.loads fails near 1000, less in a thread

# Work on the bytes (UTF-8 never has these ASCII bytes inside a longer character), with C-speed steps only.
_ONE_KIND = bytes.maketrans(b"{}", b"[]")  # json recurses on both kinds alike, matched or not
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')


class JSONLimitError(ValueError):
    """A JSON file too big or too deeply nested to be parsed (said with its path)."""


def _brackets(data: bytes) -> bytes:
    """The brackets of a JSON text outside its strings, '{' written '[' and '}' written ']'."""
    # an escaped backslash, then an escaped quote, are no string's end; any other escape holds no quote
    quotes = data.replace(b"\\\\", b"").replace(b'\\"', b"").translate(_ONE_KIND, _NOT_STRUCTURE)
    # two quotes side by side hold nothing between them, and taking them out leaves every other byte inside or
    # outside a string as it was: most strings go here, fast; what is left splits into outside / inside
    return b"".join(quotes.replace(b'""', b"").split(b'"')[0::2])


def nesting(text: str | bytes, limit: int = MAX_DEPTH) -> int:
    """How deeply the arrays and objects of a JSON text nest (brackets inside strings do not count); an upper
    bound for text that is not valid JSON; once past `limit` the count stops, at a number above it."""
    brackets = _brackets(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    if b"[" * (limit + 1) in brackets:
        return limit + 1  # a long run of openers: no need to count further
    depth = 0
    while b"[]" in brackets and depth <= limit:  # each pass removes the innermost level
        brackets = brackets.replace(b"[]", b"")
        depth += 1
    return depth + brackets.count(b"[")  # openers never closed: json would still recurse into each


def _read_bytes(path: Path, limit: int) -> bytes:
    # O_NONBLOCK: opening a FIFO must not wait for a writer; for a regular file it changes nothing
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise JSONLimitError(f"{path} is not a regular file (a device, a FIFO or a socket); not read")
        data = f.read(limit + 1)  # not the size stat says: a file may grow while it is read
    if len(data) > limit:
        raise JSONLimitError(
            f"{path} is bigger than a {path.name} can be ({limit // MiB} MiB at most): damaged, "
            f"or not written by attnlab"
        )
    return data


def read(path: str | Path, kind: str | None = None, max_depth: int = MAX_DEPTH):
    """The parsed JSON of `path`, refused (JSONLimitError) when over the size limit of its `kind` (by default
    its file name) or nested deeper than `max_depth`; invalid JSON or UTF-8 raises ValueError; OSError as
    usual."""
    path = Path(path)
    data = _read_bytes(path, LIMITS.get(kind or path.name, DEFAULT_LIMIT))
    if nesting(data, max_depth) > max_depth:
        raise JSONLimitError(
            f"{path} nests deeper than {max_depth} levels of brackets: damaged, or not written "
            f"by attnlab; train it again or restore a copy"
        )
    return json.loads(data.decode("utf-8"))

"""Reading a file the lab opens because of a request or a user's folder (a checkpoint's parts, a sweep's
scale.json, a corpus of `serve --data DIR`, an export's inputs): every such read goes through here.

- Regular files only: a FIFO, a socket or a device (/dev/zero through a link) is refused without blocking on
  it (the open is non-blocking, and the kind is checked on the open file, not on a name that may change).
- Inside its root, when one is given: the path is resolved through its links first, and one that leads out
  of the root (or loops) is refused.
- Bounded before reading: at most `limit` bytes are read, so a huge file costs nothing; a bigger one is refused.
- JSON bounded before parsing: json.loads recurses once per nesting level, so a file of 100,000 '[' would raise
  RecursionError (or, in a thread with a small stack, worse); the nesting is counted first by a cheap scan
  that skips strings.
Every refusal is a ReadRefused (a ValueError) whose message names the file and says why, in one line.
A library that opens a path itself (safetensors maps it, tokenizers reads it) gets it from `regular()`, and a
checksum reads through `open_regular()`; tests/test_hardening_open_sites.py finds every place under attnlab that
opens a file and fails on one that neither comes here nor says why it need not.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

MiB = 2**20
# bytes, by kind: attnlab writes a few kB of config, a big BPE tokenizer a few MB, a sweep's scale.json under 1 MB
LIMITS = {"config.json": 16 * MiB, "tokenizer.json": 64 * MiB, "train_state.json": 64 * MiB, "scale.json": 16 * MiB}
DEFAULT_LIMIT = 16 * MiB
MAX_DEPTH = 64  # attnlab's own files nest fewer than 10 levels; json.loads fails near 1000, less in a thread

# Work on the bytes (UTF-8 never has these ASCII bytes inside a longer character), with C-speed steps only.
_ONE_KIND = bytes.maketrans(b"{}", b"[]")  # json recurses on both kinds alike, matched or not
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')


class ReadRefused(ValueError):
    """A file that is not read: not a regular file, outside its root, or too big (said with its path)."""


class JSONLimitError(ReadRefused):
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


def inside(path: str | Path, root: str | Path) -> Path:
    """`path` with its links resolved, or ReadRefused when that leads outside `root` (itself resolved) or loops."""
    try:
        real, base = Path(path).resolve(), Path(root).resolve()
        os.stat(real)  # Python 3.13 resolves a loop quietly: the file system still says ELOOP
    except FileNotFoundError:
        pass
    except (RuntimeError, OSError) as err:
        if isinstance(err, RuntimeError) or err.errno == errno.ELOOP:
            raise ReadRefused(f"{path} leads through a symbolic link that loops; not read") from None
        raise
    if not real.is_relative_to(base):
        raise ReadRefused(f"{path} leads outside {root} (through a link); not read")
    return real


@contextmanager
def open_regular(path: str | Path, *, root: str | Path | None = None) -> Iterator[BinaryIO]:
    """The regular file `path` (inside `root` when given) open for reading in binary, else ReadRefused; a missing
    file raises OSError as usual. For a reader that takes it in chunks (a checksum) and needs no size bound."""
    path = Path(path)
    where = inside(path, root) if root is not None else path
    # O_NONBLOCK: opening a FIFO must not wait for a writer; for a regular file it changes nothing
    fd = os.open(where, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ReadRefused(f"{path} is not a regular file (a device, a FIFO or a socket); not read")
        yield f


def regular(path: str | Path, *, root: str | Path | None = None) -> Path:
    """`path` (its links resolved, when `root` is given) once it is known to be a regular file inside `root`, for
    a library that opens the path itself (safetensors maps it, tokenizers reads it): ReadRefused before a FIFO
    or a device reaches it. Checked on the open file, as the readers above do."""
    with open_regular(path, root=root):
        pass
    return inside(path, root) if root is not None else Path(path)


def read_bytes(path: str | Path, limit: int, *, root: str | Path | None = None) -> bytes:
    """The bytes of the regular file `path` (inside `root` when given), at most `limit` of them, else ReadRefused;
    a missing file raises OSError as usual."""
    path = Path(path)
    with open_regular(path, root=root) as f:
        data = f.read(limit + 1)  # not the size stat says: a file may grow while it is read
    if len(data) > limit:
        raise JSONLimitError(
            f"{path} is bigger than a {path.name} can be ({limit / MiB:g} MiB at most): damaged, or not written by attnlab"
        )
    return data


def read_text(path: str | Path, limit: int, *, root: str | Path | None = None) -> str:
    """read_bytes() decoded as UTF-8 (a bad byte is a ValueError)."""
    return read_bytes(path, limit, root=root).decode("utf-8")


def read_json(
    path: str | Path,
    kind: str | None = None,
    max_depth: int = MAX_DEPTH,
    *,
    root: str | Path | None = None,
    limit: int | None = None,
):
    """The parsed JSON of the regular file `path` (inside `root` when given), refused (ReadRefused) when over
    `limit` bytes (by default the limit of its `kind`, by default its file name) or nested deeper than `max_depth`;
    invalid JSON or UTF-8 raises ValueError; OSError as usual."""
    path = Path(path)
    data = read_bytes(path, limit or LIMITS.get(kind or path.name, DEFAULT_LIMIT), root=root)
    if nesting(data, max_depth) > max_depth:
        raise JSONLimitError(
            f"{path} nests deeper than {max_depth} levels of brackets: damaged, or not written "
            f"by attnlab; train it again or restore a copy"
        )
    return json.loads(data.decode("utf-8"))

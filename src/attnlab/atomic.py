"""Write a folder all at once: whatever moment a crash (or `kill -9`) strikes, the old folder or the new one
is there afterwards, whole, and nothing else is left beside it.

The new folder is built beside the target, under names that say how far the save got:

    .NAME.tmp-PID-X   being written              incomplete: removed
    .NAME.new-PID-X   written and flushed        complete: put in place if NAME is missing
    .NAME.old-PID-X   the previous NAME          complete: put back if NAME is missing and no .new
    .NAME.del-PID-X   being removed              removed

A save goes tmp -> new, NAME -> old, new -> NAME, old -> del, remove del. Each step is one rename (atomic),
so at every moment NAME or one of the complete leftovers holds a whole folder. `recover(NAME)` runs before
every save and when a checkpoint is read: it puts a complete leftover in place when NAME is missing (the
newest save wins) and removes the rest. Leftovers of a process that is still running (a save in progress)
are left alone.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

# Tests set this to stop the process at a given step (os._exit), as a crash would: step(name, folder).
_after_step: Callable[[str, Path], None] | None = None

_LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|new|old|del)-(?:(?P<pid>\d+)-)?[0-9a-f]{8}$")


def _reached(step: str, folder: Path) -> None:
    if _after_step is not None:
        _after_step(step, folder)


def _beside(out: Path, kind: str) -> Path:
    return out.parent / f".{out.name}.{kind}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _fsync_dir(path: Path) -> None:
    """Make renames in `path` durable (a power cut after the save keeps them); not possible everywhere."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _alive(pid: int | None) -> bool:
    """Is the process that left this folder still running (and so maybe still saving)?"""
    if pid is None:  # named by an older attnlab, which is not running now
        return False
    if pid == os.getpid():
        return True
    if os.name == "nt":  # os.kill(pid, 0) would terminate it there
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's, running
        return True
    except OSError:
        return False
    return True


def leftovers(out: Path) -> list[tuple[str, Path]]:
    """(kind, folder) of every leftover of an interrupted save of `out` whose process has ended."""
    out = Path(out)
    found = []
    try:
        entries = list(out.parent.iterdir())
    except OSError:
        return []
    for entry in entries:
        m = _LEFTOVER.match(entry.name)
        if m and m["name"] == out.name and not _alive(int(m["pid"]) if m["pid"] else None):
            found.append((m["kind"], entry))
    return found


def _remove(folder: Path) -> None:
    """Rename a leftover to .del first, so a folder half removed is never taken for a complete one."""
    m = _LEFTOVER.match(folder.name)
    if m and m["kind"] in ("new", "old"):
        gone = _beside(folder.parent / m["name"], "del")
        try:
            os.rename(folder, gone)
        except OSError:
            return  # gone already (another process recovered it) or not ours to move
        _reached("retired", gone)
        folder = gone
    shutil.rmtree(folder, ignore_errors=True)


def recover(out: Path) -> bool:
    """Finish or undo an interrupted save of `out`: True when a complete leftover was put in place.

    Best effort: a folder that cannot be changed (read-only) is left as it is.
    """
    out = Path(out)
    found = leftovers(out)
    if not found:
        return False
    restored = None
    if not out.exists() and not out.is_symlink():
        complete = [p for kind, p in found if kind == "new"] or [p for kind, p in found if kind == "old"]
        for folder in sorted(complete, key=lambda p: p.stat().st_mtime_ns if p.exists() else 0, reverse=True):
            try:
                os.rename(folder, out)
            except OSError:
                continue  # another process got there first
            restored = folder
            _fsync_dir(out.parent)
            break
    for _, folder in found:
        if folder != restored:
            _remove(folder)
    return restored is not None


@contextmanager
def atomic_dir(out: Path) -> Iterator[Path]:
    """Yield a fresh temporary folder beside `out`; on success it replaces `out` (old contents removed).

    An error inside (or while swapping) leaves `out` as it was and no folder behind; a crash leaves
    leftovers that `recover(out)` turns back into exactly one complete `out`.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    recover(out)  # a save interrupted earlier: put it right before this one starts
    tmp = _beside(out, "tmp")
    tmp.mkdir()  # not mkdtemp: its 0700 would hide a site from a web server running as another user
    _reached("created", tmp)
    try:
        yield tmp
        _reached("written", tmp)
        _fsync_dir(tmp)
        new = _beside(out, "new")
        os.rename(tmp, new)  # complete from here on
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _fsync_dir(out.parent)
    _reached("sealed", new)
    old = None
    try:
        if out.exists() or out.is_symlink():
            old = _beside(out, "old")
            os.rename(out, old)
            _reached("moved-aside", old)
        os.rename(new, out)
    except BaseException:
        if old is not None and not out.exists():
            try:
                os.rename(old, out)  # put the old folder back
            except OSError:
                pass  # recover() will, next time
        _remove(new)
        raise
    _fsync_dir(out.parent)
    _reached("published", out)
    if old is not None:
        _remove(old)

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
newest save wins) and removes the rest.

A save holds a lock on the parent folder (flock: the kernel lets go when the process ends, however it ends),
so leftovers are recovered only when no save there is running. Where folders cannot be locked (Windows,
some network file systems), the process id in the name tells whether their writer still runs.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

# Tests set this to stop the process at a given step (kill -9), as a crash would: step(name, folder).
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


@contextmanager
def _saving_lock(folder: Path, wait: bool) -> Iterator[bool | None]:
    """The lock every save in `folder` holds: True when we hold it, False when a running save does (and we
    did not wait), None when this system cannot lock folders."""
    fd = None
    if fcntl is not None:
        try:
            fd = os.open(folder, os.O_RDONLY)
        except OSError:
            fd = None
    held = None
    if fd is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            held = True
        except BlockingIOError:
            held = False
        except OSError:
            held = None
    try:
        yield held
    finally:
        if fd is not None:
            os.close(fd)  # lets go of the lock


def _alive(pid: int | None) -> bool:
    """Is the process that left this folder still running? (Only asked where folders cannot be locked.)"""
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


def _leftovers(out: Path, check_pids: bool) -> list[tuple[str, Path]]:
    """(kind, folder) of every leftover of a save of `out` (whose process has ended, when check_pids)."""
    try:
        entries = list(out.parent.iterdir())
    except OSError:
        return []
    found = []
    for entry in entries:
        m = _LEFTOVER.match(entry.name)
        if m and m["name"] == out.name and not (check_pids and _alive(int(m["pid"]) if m["pid"] else None)):
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
            return  # gone already, or not ours to move
        _reached("retired", gone)
        folder = gone
    shutil.rmtree(folder, ignore_errors=True)


def _recover(out: Path, check_pids: bool) -> bool:
    found = _leftovers(out, check_pids)
    restored = None
    if found and not out.exists() and not out.is_symlink():
        complete = [p for kind, p in found if kind == "new"] or [p for kind, p in found if kind == "old"]
        for folder in sorted(complete, key=lambda p: p.stat().st_mtime_ns if p.exists() else 0, reverse=True):
            try:
                os.rename(folder, out)
            except OSError:
                continue
            restored = folder
            _fsync_dir(out.parent)
            break
    for _, folder in found:
        if folder != restored:
            _remove(folder)
    return restored is not None


def recover(out: Path) -> bool:
    """Finish or undo an interrupted save of `out`: True when a complete leftover was put in place.

    Leaves everything alone while a save in the same folder runs, except when `out` is missing in the middle
    of one (the instant between its two renames): then it waits for that save to end. Best effort: a folder
    that cannot be changed (read-only) is left as it is.
    """
    out = Path(out)
    if not _leftovers(out, check_pids=False):
        return False  # the usual case, without taking any lock
    with _saving_lock(out.parent, wait=not out.exists()) as held:
        if held is False:
            return False  # a save is running here: the folders beside `out` are its work
        return _recover(out, check_pids=held is None)


@contextmanager
def atomic_dir(out: Path) -> Iterator[Path]:
    """Yield a fresh temporary folder beside `out`; on success it replaces `out` (old contents removed).

    An error inside (or while swapping) leaves `out` as it was and no folder behind; a crash leaves
    leftovers that `recover(out)` turns back into exactly one complete `out`. Saves into one folder take
    turns.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with _saving_lock(out.parent, wait=True) as held:
        _recover(out, check_pids=held is None)  # a save interrupted earlier: put it right first
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


def check_writable(out: Path) -> None:
    """Prove that `out` can be saved now, as atomic_dir saves it: make the folders above it (they stay, as the
    save would make them; removing them could pull one from under another rank's probe), then a folder
    beside `out`, named as a save's temporary folder (recover() removes it after a crash), with a file in it,
    synced; then remove that folder. Raises the OSError that stops it (a read-only disk, /proc, no
    permission: a permission check alone passes /proc as root), so a long job is refused before it starts,
    not lost at its end."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # under the saving lock, as a save: another process's recover() (torchrun's other rank checks the same
    # folder at the same moment) would otherwise take the probe for a crashed save's leftover and remove it
    with _saving_lock(out.parent, wait=True):
        probe = _beside(out, "tmp")
        probe.mkdir()
        try:
            fd = os.open(probe / "probe", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, b"attnlab")
                os.fsync(fd)
            finally:
                os.close(fd)
        finally:
            shutil.rmtree(probe, ignore_errors=True)


@contextmanager
def atomic_file(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`, with the same suffix (a writer that picks the format by it picks
    the same); when the block ends, the file is synced and renamed onto `path`. So `path` holds the old file
    or the whole new one, never a part: a full disk or an error inside removes the temporary file and leaves
    `path` as it was (a kill -9 may leave a hidden .NAME.part-PID-X file)."""
    path = Path(path)
    tmp = path.parent / f".{path.name}.part-{os.getpid()}-{uuid.uuid4().hex[:8]}{path.suffix}"
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDWR)
        try:
            os.fsync(fd)  # a full disk can show only here (delayed allocation)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise
    _fsync_dir(path.parent)

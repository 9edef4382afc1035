"""Resolving a path whose links may loop (a → a, or a → b → a), so that a loop is said, not a traceback.

Path.resolve() raises RuntimeError("Symlink loop ...") on Python up to 3.12; 3.13 returns the path unresolved
without a word, after which every open fails with ELOOP. Both become LinkLoop here.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path


class LinkLoop(OSError):
    """A symbolic link that leads back to itself: nothing can be opened there."""

    def __init__(self, path: Path):
        super().__init__(
            errno.ELOOP,
            f"{path} leads through a symbolic link that loops back on itself "
            f"(directly or through other links): nothing can be opened there; remove "
            f"or fix the link",
        )

    def __str__(self) -> str:
        return self.strerror


def real_path(path: str | Path) -> Path:
    """`path` with every link resolved (a missing end is fine, as with resolve()), or LinkLoop."""
    path = Path(path)
    try:
        real = path.resolve()
    except RuntimeError:  # Python <= 3.12
        raise LinkLoop(path) from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise LinkLoop(path) from None
        raise
    try:
        os.stat(real)  # Python >= 3.13 resolves a loop quietly: the file system still says ELOOP
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise LinkLoop(path) from None
    return real


def is_loop(path: str | Path) -> bool:
    try:
        real_path(path)
    except LinkLoop:
        return True
    except OSError:
        return False
    return False

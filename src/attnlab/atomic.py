"""Write a folder all at once: build it beside the target, then rename it into place.

A crash or an error part-way leaves the target as it was and no temporary folder behind.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_dir(out: Path) -> Iterator[Path]:
    """Yield a fresh temporary folder beside `out`; on success it replaces `out` (old contents removed)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()  # not mkdtemp: its 0700 would hide a site from a web server running as another user
    try:
        yield tmp
        if out.exists():
            old = out.parent / f".{out.name}.old-{uuid.uuid4().hex[:8]}"
            os.rename(out, old)
            try:
                os.rename(tmp, out)
            except BaseException:
                os.rename(old, out)  # put the old folder back
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise

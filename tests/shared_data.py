"""Where the real corpora are: ATTNLAB_DATA, or ../shared/data beside the checkout (a worktree sits deeper)."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    here = Path(__file__).resolve()
    candidates = [Path(os.environ["ATTNLAB_DATA"])] if os.environ.get("ATTNLAB_DATA") else []
    candidates += [p / "shared" / "data" for p in here.parents[1:4]]
    return next((c for c in candidates if c.is_dir()), candidates[0])

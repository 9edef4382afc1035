"""Is a checkpoint the one that was saved? Checksums of its files, and how many numbers its weights file holds.

A flipped bit in the weights or a tokenizer with two characters swapped still loads and generates, only
wrongly; the sha256 recorded in config.json at save time tells. The numbers model.safetensors' header
declares are counted before any weight is allocated, so an edited config.json cannot make the loader
allocate a model much bigger than the file.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

from safetensors import safe_open

from attnlab.io import safe_read

CHUNK = 1 << 20


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes, read in chunks (memory stays small for any size)."""
    h = hashlib.sha256()
    with safe_read.open_regular(path) as f:  # a FIFO or a device in a user's folder is refused, not waited on
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()


def is_sha256(value) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def changed_files(folder: Path, recorded: dict, names: tuple[str, ...]) -> list[str]:
    """Those of `names` whose sha256 differs from the one recorded (a name not recorded counts as changed)."""
    return [name for name in names if recorded.get(name) != sha256_file(folder / name)]


def stored_numbers(path: Path) -> int:
    """How many numbers a safetensors file holds, from its header alone (safetensors checks the header
    against the file's length, so these numbers are really there)."""
    total = 0
    with safe_open(str(safe_read.regular(path)), "pt") as f:
        for name in f.keys():
            total += math.prod(f.get_slice(name).get_shape())
    return total

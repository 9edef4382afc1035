"""Is a checkpoint the one that was saved? Checksums of its files, and its weights' shapes read before loading.

A flipped bit in the weights or a tokenizer with two characters swapped still loads and generates, only
wrongly; the sha256 recorded in config.json at save time tells. The shapes in model.safetensors' header
are compared with the model config.json describes before any weight is allocated, so an edited config
cannot make the loader allocate a model the file does not hold.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch
from safetensors import safe_open

from attnlab.models import GPT, GPTConfig

CHUNK = 1 << 20


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes, read in chunks (memory stays small for any size)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()


def is_sha256(value) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def changed_files(folder: Path, recorded: dict, names: tuple[str, ...]) -> list[str]:
    """Those of `names` whose sha256 differs from the one recorded (a name not recorded counts as changed)."""
    return [name for name in names if recorded.get(name) != sha256_file(folder / name)]


def weights_mismatch(path: Path, config: GPTConfig) -> str | None:
    """How the tensors in a safetensors file differ from the ones a GPT of `config` holds, or None.

    Reads only the file's header; the model is built on the meta device (no memory)."""
    with torch.device("meta"):
        model = GPT(config)
    expected = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    aliases: dict[int, list[str]] = {}  # tied weights are one tensor under two names, stored under one
    for name, p in model.named_parameters(remove_duplicate=False):
        aliases.setdefault(id(p), []).append(name)
    alias_of = {name: names for names in aliases.values() for name in names}
    with safe_open(str(path), "pt") as f:
        found = {name: tuple(f.get_slice(name).get_shape()) for name in f.keys()}
    unexpected = sorted(set(found) - set(expected))
    if unexpected:
        return f"unexpected tensors {', '.join(unexpected[:3])}"
    for name, shape in found.items():
        if shape != expected[name]:
            return f"{name} is {list(shape)} in the file but {list(expected[name])} in the model"
    missing = [n for n in expected if n not in found and not any(a in found for a in alias_of.get(n, []))]
    if missing:
        return f"missing tensors {', '.join(missing[:3])}"
    return None

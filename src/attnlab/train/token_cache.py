"""Tokenize a large corpus once: its token ids saved as a uint16 memmap file, reused by every later run.

The file's name is a sha256 of the tokenizer (its tokenizer.json form) and of the texts themselves, so an edited
corpus or another tokenizer never reads a stale cache. Ids are stored as uint16 (2 bytes a token, as nanoGPT's
train.bin): vocabularies of 65,536 tokens or more are not cached. Files are written whole, then renamed, so a
run that dies mid-write leaves no half file behind.

Where: $ATTNLAB_CACHE/tokens, else ~/.cache/attnlab/tokens.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

MIN_CACHED_CHARS = 1_000_000  # smaller corpora tokenize in well under a second: not worth a file
UINT16_VOCAB = 2**16


def cache_dir() -> Path:
    root = os.environ.get("ATTNLAB_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "attnlab") / "tokens"


def cache_key(texts: list[str], tokenizer) -> str:
    """sha256 of the tokenizer's saved form and of every text (each prefixed by its length: no two corpora
    that split differently hash alike)."""
    h = hashlib.sha256()
    h.update(json.dumps(tokenizer.to_dict(), sort_keys=True, ensure_ascii=False).encode("utf-8"))
    for text in texts:
        data = text.encode("utf-8")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def token_stream(texts: list[str], tokenizer) -> Tensor:
    """[text_1, <eot>, text_2, <eot>, ...] as one (N,) int64 tensor."""
    ids: list[int] = []
    for text in texts:
        ids += tokenizer.encode(text)
        ids.append(tokenizer.eot_id)
    return torch.tensor(ids, dtype=torch.long)


def cached_token_stream(texts: list[str], tokenizer, directory: str | Path | None = None) -> Tensor:
    """The same (N,) int64 stream as token_stream(texts, tokenizer), read from the cache when it is there,
    else computed and saved there."""
    if tokenizer.vocab_size > UINT16_VOCAB:
        return token_stream(texts, tokenizer)
    folder = Path(directory) if directory is not None else cache_dir()
    path = folder / f"{cache_key(texts, tokenizer)}.uint16"
    if path.is_file() and path.stat().st_size % 2 == 0:
        ids = np.memmap(path, dtype=np.uint16, mode="r")  # (N,) read lazily from the file
        return torch.from_numpy(ids.astype(np.int64))  # (N,) int64, as the loop indexes and the loss wants
    stream = token_stream(texts, tokenizer)
    try:
        save_ids(stream, path)
    except OSError:
        pass  # a read-only home or a full disk: the run goes on without a cache
    return stream


def save_ids(stream: Tensor, path: Path) -> None:
    """Write (N,) token ids as uint16, atomically (a temporary file in the same folder, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".uint16")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(stream.numpy().astype(np.uint16).tobytes())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

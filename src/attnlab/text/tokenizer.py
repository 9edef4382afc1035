"""Saving and loading tokenizers: one `tokenizer.json`, whose "type" field says which kind it is."""

from __future__ import annotations

import json
from pathlib import Path

from attnlab.io import safe_read
from attnlab.text.bpe import BPETokenizer
from attnlab.text.char import CharTokenizer

KINDS = {"char": CharTokenizer, "bpe": BPETokenizer}


Tokenizer = CharTokenizer | BPETokenizer


def train_tokenizer(kind: str, texts, vocab_size: int = 512) -> Tokenizer:
    """A new tokenizer of `kind` ('char' or 'bpe') learned from `texts`."""
    if kind == "char":
        return CharTokenizer.train(texts)
    if kind == "bpe":
        return BPETokenizer.train(texts, vocab_size=vocab_size)
    raise ValueError(f"unknown tokenizer kind {kind!r}; expected 'char' or 'bpe'")


def tokenizer_from_dict(d: dict) -> Tokenizer:
    kind = d.get("type") if isinstance(d, dict) else None
    if kind not in KINDS:
        raise ValueError(f"tokenizer.json has type {kind!r}; expected one of {sorted(KINDS)}")
    return KINDS[kind].from_dict(d)


def save_tokenizer(tok: Tokenizer, path: str | Path) -> None:
    Path(path).write_text(json.dumps(tok.to_dict(), ensure_ascii=False), encoding="utf-8")


def load_tokenizer(path: str | Path) -> Tokenizer:
    """Read a `tokenizer.json` written by `save_tokenizer`, whichever kind it holds."""
    path = Path(path)
    try:
        d = safe_read.read_json(path, "tokenizer.json")  # a regular file, bounded in size and nesting
    except FileNotFoundError:
        raise ValueError(f"no tokenizer file at {path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path} is not a valid tokenizer.json ({e})") from None
    try:
        return tokenizer_from_dict(d)
    except (KeyError, TypeError) as e:
        raise ValueError(f"{path} is not a valid tokenizer.json (missing or malformed {e})") from None

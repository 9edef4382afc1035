"""The texts and tokenizers behind `attnlab explain bpe`.

The text: the lab's own words (words.json, every UI string in zh and en, frozen by tools/bpe_words.py), or a corpus
file's lines. Every tenth string is held out: tokens per character are counted on what the tokenizer never saw.
The tokenizer: attnlab.text.bpe's byte-level BPE (GPT-2's scheme, trained by the `tokenizers` library): 256 byte
tokens and '<eot>' (257), then one merge per token added. The null: each string's characters shuffled before
training (the same characters as often, no order).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from attnlab.text.bpe import BPETokenizer

BYTES_ONLY = 257  # 256 bytes + '<eot>': no merge at all
COURSE_WORDS = ("变压器", "注意力", "床前明月光", "Transformer", "tokenization", "attention")  # cut by MiniLM too
HAN = re.compile(r"[\u4e00-\u9fff]")
WORDS = Path(__file__).with_name("words.json")


@dataclass(frozen=True)
class Split:
    train: tuple[str, ...]  # zh and en strings the tokenizer learns from
    zh: str  # the held-out Chinese text
    en: str  # the held-out English text


@lru_cache(maxsize=1)
def our_words() -> dict[str, list[str]]:
    return json.loads(WORDS.read_text(encoding="utf-8"))


def split(zh: list[str], en: list[str]) -> Split:
    """Every tenth string of each language held out."""
    return Split(
        tuple(s for i, s in enumerate(zh) if i % 10) + tuple(s for i, s in enumerate(en) if i % 10),
        "".join(s for i, s in enumerate(zh) if i % 10 == 0),
        " ".join(s for i, s in enumerate(en) if i % 10 == 0),
    )


@lru_cache(maxsize=16)
def tokenizer(texts: tuple[str, ...], vocab: int) -> BPETokenizer:
    return BPETokenizer.train(list(texts), vocab)


def tokens_per_char(tok: BPETokenizer, text: str) -> float:
    return len(tok.encode(text)) / max(len(text), 1)


def bytes_per_char(text: str) -> float:
    return len(text.encode("utf-8")) / max(len(text), 1)


def multi_han(tok: BPETokenizer) -> int:
    """Tokens of the vocabulary that hold two or more whole 汉字: merges across characters, words."""
    return sum(1 for i in range(tok.vocab_size) if len(HAN.findall(tok.decode([i]))) >= 2)


def sizes(vocab: int) -> list[int]:
    """The vocabulary sizes the curve visits: bytes only, the powers of two below `vocab`, and `vocab`."""
    out, n = [BYTES_ONLY], 512
    while n < vocab:
        out.append(n)
        n *= 2
    return out + ([vocab] if vocab > BYTES_ONLY else [])


@lru_cache(maxsize=1)
def wordpiece():
    """MiniLM's tokenizer (BERT's uncased WordPiece) where its package is installed, else None: the checkpoint's
    tokenizer.json as attnlab.pretrained reads it (a regular file, no padding)."""
    from attnlab.pretrained import installed, locate
    from attnlab.text.pretrained import PretrainedTokenizer

    return PretrainedTokenizer.from_file(locate("minilm") / "tokenizer.json") if installed() else None


def wordpiece_han(tok) -> int:
    """The vocabulary's tokens that are one whole 汉字: all a WordPiece can write Chinese with (BERT cuts every 汉字
    apart before looking it up)."""
    return sum(1 for i in range(tok.vocab_size) if HAN.fullmatch(tok.token(i)))

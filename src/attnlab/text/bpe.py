"""Byte-level BPE (as in GPT-2), trained with the `tokenizers` library, for corpora larger than one poem.

Byte-level means every text can be encoded: a character never seen in training falls back to its UTF-8
bytes, so this tokenizer has no unknown characters. A Chinese character is three bytes; BPE merges the
byte pairs it sees often, so common characters become one token and rare ones stay split.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

EOT = "<eot>"


@lru_cache(maxsize=1)
def _unicode_to_byte() -> dict[str, int]:
    """Byte-level BPE spells byte b as one printable character; this maps it back (GPT-2's table)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[chr(b)] = b
        else:
            table[chr(256 + extra)] = b
            extra += 1
    return table


class BPETokenizer:
    """Byte-level BPE: text -> UTF-8 bytes -> merged byte pairs -> ids."""

    kind = "bpe"

    def __init__(self, tokenizer: Tokenizer):
        self._tok = tokenizer
        eot = tokenizer.token_to_id(EOT)
        if eot is None:
            raise ValueError(f"a BPE tokenizer for attnlab needs the special token {EOT!r}")
        self.eot_id = eot

    @classmethod
    def train(cls, texts: str | Iterable[str], vocab_size: int = 512) -> BPETokenizer:
        """Learn `vocab_size` tokens (256 bytes + merges + '<eot>') from `texts`."""
        if vocab_size < 257:
            raise ValueError(f"BPE vocab_size must be at least 257 (256 bytes + '<eot>'), got {vocab_size}")
        texts = [texts] if isinstance(texts, str) else list(texts)
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=[EOT],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tok.train_from_iterator(texts, trainer=trainer)
        return cls(tok)

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size()

    def token_bytes(self, i: int) -> bytes:
        """The UTF-8 bytes token `i` stands for (a part of a character where BPE has not merged it whole)."""
        return bytes(_unicode_to_byte()[ch] for ch in self._tok.id_to_token(i))

    def token(self, i: int) -> str:
        """The text of token `i`; a piece that is not whole UTF-8 shows its bytes, e.g. '<e5 ba>'."""
        if not 0 <= i < self.vocab_size:
            raise ValueError(f"token id {i} is outside this tokenizer's range 0..{self.vocab_size - 1}")
        piece = self._tok.id_to_token(i)
        if i == self.eot_id:
            return piece
        raw = bytes(_unicode_to_byte()[ch] for ch in piece)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return "<" + raw.hex(" ") + ">"

    def unknown(self, text: str) -> list[str]:
        """Byte-level BPE can spell any text, so nothing is unknown."""
        return []

    def encode(self, text: str) -> list[int]:
        return self._tok.encode(text).ids

    def decode(self, ids: Iterable[int]) -> str:
        return self._tok.decode([int(i) for i in ids], skip_special_tokens=True)

    def tokens(self, ids: Iterable[int]) -> list[str]:
        return [self.token(int(i)) for i in ids]

    def to_dict(self) -> dict:
        return {"type": "bpe", "tokenizer": json.loads(self._tok.to_str())}

    @classmethod
    def from_dict(cls, d: dict) -> BPETokenizer:
        return cls(Tokenizer.from_str(json.dumps(d["tokenizer"])))

    def __repr__(self) -> str:
        return f"BPETokenizer(vocab_size={self.vocab_size})"

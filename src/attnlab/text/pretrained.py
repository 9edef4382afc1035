"""A checkpoint's own tokenizer (a Hugging Face `tokenizer.json`, e.g. BERT's WordPiece), read with `tokenizers`.

WordPiece splits a word it does not know whole into pieces it does: "unaffable" -> "una", "##ffa", "##ble"
("##" = glued to the piece before). BERT-style tokenizers also lowercase, split off punctuation, and wrap
the sentence in [CLS] ... [SEP]. The file decides all of that; this class only reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer

from attnlab.io import safe_read


@dataclass
class Encoded:
    ids: list[int]
    tokens: list[str]  # the pieces, e.g. ["[CLS]", "the", "animal", ..., "[SEP]"]
    offsets: list[tuple[int, int]]  # where each piece came from in the text; (0, 0) for [CLS]/[SEP]


class PretrainedTokenizer:
    """text -> ids exactly as the checkpoint's tokenizer.json says; no padding, no silent truncation."""

    kind = "pretrained"

    def __init__(self, tokenizer: Tokenizer):
        self._tok = tokenizer
        self._tok.no_padding()  # MiniLM's file pads every sentence to 128 tokens; we want the sentence only
        self._tok.no_truncation()  # too long is an error the caller reports, not text quietly dropped

    @classmethod
    def from_file(cls, path: str | Path) -> PretrainedTokenizer:
        return cls(Tokenizer.from_file(str(safe_read.regular(path))))  # the library opens it: a regular file only

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size()

    def encode_full(self, text: str, *, specials: bool = True) -> Encoded:
        """The ids, tokens and character offsets of `text`; specials=False leaves out what the checkpoint adds
        around a sentence (BERT's [CLS] and [SEP])."""
        enc = self._tok.encode(text, add_special_tokens=specials)
        return Encoded(list(enc.ids), list(enc.tokens), [tuple(o) for o in enc.offsets])

    def encode(self, text: str) -> list[int]:
        return self.encode_full(text).ids

    def decode(self, ids: list[int]) -> str:
        return self._tok.decode(ids)

    def token(self, i: int) -> str:
        if not 0 <= i < self.vocab_size:
            raise ValueError(f"token id {i} is outside this tokenizer's range 0..{self.vocab_size - 1}")
        return self._tok.id_to_token(i)

    def id_of(self, piece: str) -> int | None:
        """The id of one vocabulary entry (e.g. "queen"), or None if it is not a single entry."""
        return self._tok.token_to_id(piece)

    def special_ids(self) -> set[int]:
        """Ids of the added special tokens ([CLS], [SEP], [PAD], ...)."""
        return {i for i, tok in self._tok.get_added_tokens_decoder().items() if tok.special}

"""Character tokenizer: every distinct character gets an id, in order of first appearance (床=0, 前=1, ...).

This is the id table a learner sees in step ①. One extra entry, the end-of-text mark, goes at the end of
the table so it never disturbs the characters' ids; training puts it after each text so a model learns
where a text stops, and generation stops when the model chooses it.
"""

from __future__ import annotations

from collections.abc import Iterable

EOT = "<eot>"


class CharTokenizer:
    """text -> ids one character at a time; ids follow first appearance in the training texts."""

    kind = "char"

    def __init__(self, chars: Iterable[str]):
        self.chars: list[str] = list(chars)
        if len(set(self.chars)) != len(self.chars):
            raise ValueError("CharTokenizer: the character table has duplicates")
        if any(len(c) != 1 for c in self.chars):
            bad = [c for c in self.chars if len(c) != 1][:5]
            raise ValueError(f"CharTokenizer: every entry must be one character, got {bad}")
        self.eot_id = len(self.chars)
        self._id = {c: i for i, c in enumerate(self.chars)}

    @classmethod
    def train(cls, texts: str | Iterable[str]) -> CharTokenizer:
        """Build the table from `texts`: each new character gets the next id."""
        texts = [texts] if isinstance(texts, str) else list(texts)
        return cls(dict.fromkeys(ch for text in texts for ch in text))  # dict keeps first-appearance order

    @property
    def vocab_size(self) -> int:
        return len(self.chars) + 1  # + the end-of-text mark

    def token(self, i: int) -> str:
        """The string shown for id `i` (the character itself, or '<eot>')."""
        if i == self.eot_id:
            return EOT
        if not 0 <= i < len(self.chars):
            raise ValueError(f"token id {i} is outside this tokenizer's range 0..{self.vocab_size - 1}")
        return self.chars[i]

    def unknown(self, text: str) -> list[str]:
        """The characters of `text` this tokenizer has never seen, each once, in order."""
        return [ch for ch in dict.fromkeys(text) if ch not in self._id]

    def encode(self, text: str) -> list[int]:
        """'床前' -> [0, 1]. Unseen characters are an error naming them, never a silent drop."""
        missing = self.unknown(text)
        if missing:
            shown = "".join(missing[:20]) + ("…" if len(missing) > 20 else "")
            raise ValueError(
                f"{len(missing)} character(s) not in the tokenizer's vocabulary: {shown!r} "
                f"(it knows {len(self.chars)} characters from its training text)"
            )
        return [self._id[ch] for ch in text]

    def decode(self, ids: Iterable[int]) -> str:
        """[0, 1] -> '床前'; the end-of-text mark is left out."""
        return "".join(self.token(int(i)) for i in ids if int(i) != self.eot_id)

    def tokens(self, ids: Iterable[int]) -> list[str]:
        """Each id's own string, for tables that show one cell per token."""
        return [self.token(int(i)) for i in ids]

    def to_dict(self) -> dict:
        return {"type": "char", "chars": self.chars, "eot": EOT}

    @classmethod
    def from_dict(cls, d: dict) -> CharTokenizer:
        return cls(d["chars"])

    def __repr__(self) -> str:
        return f"CharTokenizer(vocab_size={self.vocab_size})"

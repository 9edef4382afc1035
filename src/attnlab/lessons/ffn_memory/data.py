"""The text behind `attnlab explain ffn-memory`: the built-in 静夜思, or a .txt / chinese-poetry .json file's first
MAX_CHARS characters with its last tenth held out; and the evaluation contexts, one per held-out position.
"""

from __future__ import annotations

from functools import lru_cache

import torch

from attnlab.train.data import TextData, text_data

MAX_CHARS = 20_000  # a corpus file is cut to its first characters: the lesson stays within a minute on a laptop CPU
MAX_POSITIONS = 600  # held-out positions read (evenly spaced): keys, knockouts and controls are all measured on them


Data = TextData  # name, train, val (the ids the neurons are read on), held_out, vocab_size, tokenizer


@lru_cache(maxsize=8)
def corpus_data(name: str) -> Data:
    """A built-in poem whole (24 characters leave nothing to hold out), or a file's first MAX_CHARS characters with
    its last tenth held out."""
    data = text_data(name, MAX_CHARS)
    if data.held_out and len(data.val) < 50:
        raise ValueError(f"{name!r} is too short: it needs at least 500 characters")
    return data


def training_ids(data: Data, shuffle: bool, seed: int) -> torch.Tensor:
    """What the model trains on: the training ids, or (`shuffle`, the null) each text between end marks with its
    characters shuffled (attnlab.text.shuffled_chars, drawn from the seed): every count kept, every order gone.
    The neurons are still read on the real text (data.val)."""
    if not shuffle:
        return data.train
    from attnlab.text import shuffled_chars

    tok, ids = data.tokenizer, data.train.tolist()
    cuts = [i for i, c in enumerate(ids) if c == tok.eot_id]
    pieces, start = [], 0
    for end in [*cuts, len(ids)]:
        pieces.append(tok.decode(ids[start:end]))
        start = end + 1
    mixed = shuffled_chars(pieces, seed)
    out: list[int] = []
    for i, text in enumerate(mixed):
        out += tok.encode(text) + ([tok.eot_id] if i < len(cuts) else [])
    return torch.tensor(out, dtype=data.train.dtype)  # (N_train,)


def contexts(
    stream: torch.Tensor, T: int, most: int = MAX_POSITIONS
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One context per read position p (at most `most`, evenly spaced): the window of T tokens ending at p (the
    stream's first T-1 positions sit in the first window, with what precedes them). Returns x (P, T), the index of
    p inside its window (P,), and y (P,), the token after p: the model's own next-token target there."""
    n = len(stream) - 1  # positions with a next token
    if n < 1:
        raise ValueError("need at least 2 tokens")
    T = min(T, n)
    ps = torch.linspace(0, n - 1, min(most, n)).long().unique()  # (P,)
    starts = (ps - T + 1).clamp(min=0)  # (P,)
    x = stream[starts[:, None] + torch.arange(T)]  # (P, T)
    return x, ps - starts, stream[ps + 1]  # (P, T), (P,), (P,)


def shown(tok, c: int) -> str:
    """A character as the tables print it: the end-of-text mark ␃, a line break ⏎, a space ␣."""
    return "␃" if c == tok.eot_id else {"\n": "⏎", " ": "␣"}.get(tok.decode([c]), tok.decode([c]))

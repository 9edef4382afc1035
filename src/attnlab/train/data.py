"""Training data: texts -> one stream of token ids -> (input, target) windows shifted by one.

Every text ends with the end-of-text mark, so the model learns where a text stops. The target of position
i is the token at i + 1: the text supplies its own answers (self-supervision).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attnlab.train.token_cache import MIN_CACHED_CHARS, cached_token_stream, token_stream  # noqa: F401 (token_stream: re-exported)


@dataclass
class TokenData:
    """A train stream and an optional validation stream (the last fraction of the corpus, as nanoGPT splits)."""

    train: Tensor  # (N_train,)
    val: Tensor | None  # (N_val,) or None when there is nothing to hold out (a single poem)
    train_starts: Tensor | None = None  # where windows may start (each text's end-of-text mark); None: anywhere
    val_starts: Tensor | None = None

    @classmethod
    def from_texts(cls, texts: list[str], tokenizer, val_fraction: float = 0.1, min_val_tokens: int = 2, *,
                   cache: bool = False) -> "TokenData":
        """cache=True: a large corpus (MIN_CACHED_CHARS or more) is tokenized once and its ids kept in a uint16
        file (attnlab.train.token_cache) that later runs read instead of tokenizing again."""
        if not 0.0 <= val_fraction < 1.0:
            raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
        large = cache and sum(len(text) for text in texts) >= MIN_CACHED_CHARS
        stream = cached_token_stream(texts, tokenizer) if large else token_stream(texts, tokenizer)
        n_val = int(len(stream) * val_fraction)
        if n_val < min_val_tokens or len(stream) - n_val < 2:
            return cls(stream, None)
        return cls(stream[:-n_val], stream[-n_val:])

    @classmethod
    def from_split(cls, train_texts: list[str], val_texts: list[str], tokenizer, align: bool = False,
                   context_length: int = 0) -> "TokenData":
        """Streams from texts already split (by poem: split_texts), so no text is cut in two. With align, each
        stream begins with the end-of-text mark and every window starts at one: a poem's first character is
        always at position 1, as when generation starts a poem (`start_of_text`), so learned positions line up
        with the verses."""
        if not align:
            return cls(token_stream(train_texts, tokenizer), token_stream(val_texts, tokenizer) if val_texts else None)
        eot = torch.tensor([tokenizer.eot_id])
        train = torch.cat([eot, token_stream(train_texts, tokenizer)])
        val = torch.cat([eot, token_stream(val_texts, tokenizer)]) if val_texts else None
        return cls(train, val, text_starts(train, tokenizer.eot_id, context_length),
                   text_starts(val, tokenizer.eot_id, context_length) if val is not None else None)


def text_starts(stream: Tensor, eot_id: int, context_length: int) -> Tensor | None:
    """Positions of the end-of-text marks a whole window (context_length + 1 tokens) can start at."""
    marks = (stream == eot_id).nonzero().flatten()  # (n_texts,)
    marks = marks[marks + context_length < len(stream)]
    return marks if len(marks) else None


def split_texts(texts: list[str], val_fraction: float = 0.1, seed: int = 0) -> tuple[list[str], list[str]]:
    """(train, val): whole texts held out, drawn by a seeded shuffle (a collection is ordered by poet and
    era, so its last tenth would be another distribution); each list keeps the texts' order."""
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    n_val = int(round(len(texts) * val_fraction))
    if n_val == 0 or n_val == len(texts):
        return list(texts), []
    order = torch.randperm(len(texts), generator=torch.Generator().manual_seed(seed)).tolist()
    held = set(order[:n_val])
    return [t for i, t in enumerate(texts) if i not in held], [t for i, t in enumerate(texts) if i in held]


def get_batch(stream: Tensor, context_length: int, batch_size: int, generator: torch.Generator, *,
              rank: int = 0, world_size: int = 1, allowed: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """(x, y), each (B, T): random windows of the stream, y = x shifted one to the left.

    A stream that fits in one window (a poem memorized by heart) is always the one whole window, from
    position 0, so the model learns each character at the position generation will ask for it.
    With several processes (DDP) every rank draws the same global batch of world_size * B windows from the
    same seeded generator and keeps its own B: different windows on each rank, one generator state to save.
    """
    if len(stream) < 2:
        raise ValueError(f"need at least 2 tokens to train on, got {len(stream)}")
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, world_size={world_size}), got {rank}")
    if len(stream) - 1 <= context_length:
        return stream[None, :-1], stream[None, 1:]  # (1, N-1)
    if allowed is not None:  # windows that start at a text's beginning (TokenData.from_split(align=True))
        starts = allowed[torch.randint(0, len(allowed), (world_size * batch_size,), generator=generator)]
    else:
        starts = torch.randint(0, len(stream) - context_length, (world_size * batch_size,), generator=generator)
    starts = starts[rank * batch_size:(rank + 1) * batch_size]  # (W*B,) -> (B,) this rank's share
    # The generator stays on the CPU (the same windows for a seed on every device, and a state any device can
    # resume); only the B start positions travel, and the windows are gathered where the stream lives.
    starts = starts.to(stream.device, non_blocking=True)
    offsets = torch.arange(context_length, device=stream.device)  # (T,)
    x = stream[starts[:, None] + offsets]  # (B, T)
    y = stream[starts[:, None] + offsets + 1]  # (B, T)
    return x, y

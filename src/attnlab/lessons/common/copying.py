"""The copying task two lessons train on (induction, prompting): random tokens that repeat with a period drawn anew
for each sequence, so that only content, not position, says where to look; its null, the same tokens shuffled; and
the attention-only GPT both train on it."""

from __future__ import annotations

import torch

MIN_PERIOD = 2


def repeats(g: torch.Generator, batch: int, n: int, vocab: int, length: int, period: int | None = None) -> torch.Tensor:
    """(batch, length) sequences r r r ... of distinct random tokens r; |r| = period, or drawn from [2, n]."""
    rows = []
    for _ in range(batch):
        m = period or int(torch.randint(MIN_PERIOD, n + 1, (1,), generator=g))
        r = torch.randperm(vocab, generator=g)[:m]  # (m,) distinct: the previous occurrence is unique in r
        rows.append(r[torch.arange(length) % m])  # (length,)
    return torch.stack(rows)  # (batch, length)


def shuffled(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """(B, L) each row's tokens in a random order: every count kept, every order gone."""
    return x.gather(1, torch.rand(x.shape, generator=g).argsort(dim=-1))


def attention_only(n_layers: int, context: int, vocab: int, d_model: int, positions: str):
    """The GPTConfig of the copying models: pre-LN, 2 heads, no FFN."""
    from attnlab.models import GPTConfig

    return GPTConfig(
        vocab_size=vocab,
        context_length=context,
        d_model=d_model,
        n_heads=2,
        n_layers=n_layers,
        norm_first=True,
        positions=positions,
        ablations=("attention-only",),
    )

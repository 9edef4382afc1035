"""Token embedding plus positions: the row a token id looks up, plus the row for where it stands."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnlab.nn import LayerNorm, LearnedPositions, SinusoidalPositions
from attnlab.nn.multihead import hooked


def check_ids(idx: Tensor, vocab_size: int, context_length: int, offset: int = 0, what: str = "idx") -> None:
    """ValueError unless idx is (B, T) integer ids in [0, vocab_size) that fit in the context."""
    if idx.dim() != 2 or idx.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise ValueError(f"{what} must be a (B, T) tensor of integer token ids, got {idx.dtype} {tuple(idx.shape)}")
    if offset + idx.shape[1] > context_length:
        raise ValueError(
            f"sequence too long: {what} has {idx.shape[1]} tokens"
            + (f" after {offset} cached ones" if offset else "")
            + f", the context holds {context_length}"
        )
    # Checking values means reading them back: on a GPU that waits for the device at every step, so ids there
    # are trusted (the training loop checks its whole token stream once, on the CPU; see Trainer).
    if idx.device.type == "cpu" and idx.numel() and (idx.min() < 0 or idx.max() >= vocab_size):
        bad = sorted({int(i) for i in idx.flatten() if not 0 <= int(i) < vocab_size})[:10]
        raise ValueError(f"token ids must be in [0, {vocab_size}), got {bad}")


def init_head(head: nn.Linear) -> nn.Linear:
    """Small output weights (std 0.02, as GPT-2): an untrained model's logits are near 0, so its next-token
    distribution starts near uniform, p close to 1/|V| for every token."""
    nn.init.normal_(head.weight, std=0.02)
    if head.bias is not None:
        nn.init.zeros_(head.bias)
    return head


class Embedding(nn.Module):
    """x_i = E[token_i] + P[i] (no position table for rope: positions then live inside attention).

    BERT adds two optional pieces: a segment row S[type_i] (type_vocab_size > 0; sentence A or B) and a
    LayerNorm over the sum (norm=True): x_i = LN(E[token_i] + P[i] + S[type_i]).
    """

    def __init__(
        self,
        vocab_size: int,
        context_length: int,
        d_model: int,
        positions: str,
        dropout: float = 0.0,
        *,
        type_vocab_size: int = 0,
        norm: bool = False,
        eps: float = 1e-5,
        ablations: tuple[str, ...] = (),
    ):
        super().__init__()
        self.vocab_size, self.context_length = vocab_size, context_length
        self.tok = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.tok.weight, std=0.02)
        self.pos = (
            {
                "learned": lambda: LearnedPositions(context_length, d_model),
                "sinusoidal": lambda: SinusoidalPositions(context_length, d_model),
                "rope": lambda: None,
            }[positions]()
            if "no-positions" not in ablations
            else None
        )  # the "no-positions" ablation: E[token] alone
        # None when absent, so the state dict of a model without them is unchanged.
        self.seg = nn.Embedding(type_vocab_size, d_model) if type_vocab_size > 0 else None
        self.ln = LayerNorm(d_model, eps) if norm else None
        self.drop = nn.Dropout(dropout)

    def forward(self, idx: Tensor, offset: int = 0, record=None, token_type_ids: Tensor | None = None) -> Tensor:
        check_ids(idx, self.vocab_size, self.context_length, offset)
        x = self.tok(idx)  # (B, T) -> (B, T, d_model)
        if record is not None:
            record("tokens", x)
        if self.pos is not None:
            positions = torch.arange(offset, offset + idx.shape[1], device=idx.device)
            pos = self.pos(positions)  # (T, d_model)
            if record is not None:
                record("positions", pos)
            x = x + pos  # (B, T, d_model) + (T, d_model)
        if self.seg is not None:
            types = torch.zeros_like(idx) if token_type_ids is None else token_type_ids  # (B, T), all sentence A
            x = x + self.seg(types)  # (B, T, d_model)
        elif token_type_ids is not None:
            raise ValueError("token_type_ids given, but this model has no token-type (segment) embedding")
        if self.ln is not None:
            x = self.ln(x)
        x = hooked(record, "output", x)  # (B, T, d_model): the residual stream before any block (lens layer 0)
        return self.drop(x)

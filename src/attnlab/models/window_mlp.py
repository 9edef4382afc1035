"""The fixed-window MLP language model (Bengio et al. 2003): the baseline a Transformer is measured against.

For every position t, the next token's logits come from the last `window` tokens only:
  x_t = [E[idx_{t-w+1}]; ...; E[idx_t]]        concatenated in order, oldest first   (w · d_embed,)
  h_t = tanh(W_h x_t + b_h)                                                          (d_hidden,)
  logits_t = W_out h_t + b_out                                                       (vocab_size,)
Positions before the start of the sequence read a padding row of E of their own (id vocab_size), learned
like the others, so "nothing here yet" is never confused with token 0.

Why a fixed MLP does not suit language (chapter 16): the window is fixed by construction, so a token w or more
places back can never change a prediction, however much data it sees; and W_h gives every slot its own
weights, so what it learns about a character in slot 1 teaches it nothing about the same character in slot 2.
Bengio's paper also offers direct input-to-output weights (y = b + Wx + U tanh(d + Hx)); we leave them out.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlab.models.embedding import check_ids, init_head


@dataclass
class WindowMLPConfig:
    vocab_size: int = 64  # how many distinct tokens
    context_length: int = 64  # the longest sequence it is given (the training loop cuts windows this long)
    window: int = 3  # tokens it reads for each prediction, the current one included (n-1 of an n-gram)
    d_embed: int = 16  # width of one token's embedding
    d_hidden: int = 64  # width of the tanh hidden layer
    dropout: float = 0.0  # on the hidden layer, while training

    def __post_init__(self) -> None:
        for name in ("vocab_size", "context_length", "window", "d_embed", "d_hidden"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.window > self.context_length:
            raise ValueError(
                f"window must be at most context_length: got window={self.window}, "
                f"context_length={self.context_length} (it never reads more than the context holds)"
            )
        if (
            isinstance(self.dropout, bool)
            or not isinstance(self.dropout, (int, float))
            or not 0.0 <= self.dropout < 1.0
        ):
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> WindowMLPConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown {cls.__name__} fields {sorted(unknown)}; expected some of {sorted(known)}")
        return cls(**data)


def n_params(config: WindowMLPConfig) -> int:
    """Parameters in closed form: E (V+1 rows, the padding row included), W_h and b_h, W_out and b_out."""
    V, w, d, H = config.vocab_size, config.window, config.d_embed, config.d_hidden
    return (V + 1) * d + (w * d * H + H) + (H * V + V)


class WindowMLP(nn.Module):
    """logits_t = W_out tanh(W_h [E[idx_{t-w+1}]; ...; E[idx_t]] + b_h) + b_out, for every t at once."""

    def __init__(self, config: WindowMLPConfig):
        super().__init__()
        self.config = c = config
        self.pad_id = c.vocab_size  # E's last row: "before the start", not any token
        self.E = nn.Embedding(c.vocab_size + 1, c.d_embed)
        self.W_h = nn.Linear(c.window * c.d_embed, c.d_hidden)
        self.drop = nn.Dropout(c.dropout)
        self.W_out = init_head(nn.Linear(c.d_hidden, c.vocab_size))  # small: an untrained model is near uniform

    def windows(self, idx: Tensor) -> Tensor:
        """idx (B, T) -> (B, T, window): row t holds ids t-w+1 .. t, padding ids where t-w+1 < 0."""
        w = self.config.window
        padded = F.pad(idx, (w - 1, 0), value=self.pad_id)  # (B, w-1+T)
        return padded.unfold(1, w, 1)  # (B, T, w): a view, no copy

    def forward(self, idx: Tensor) -> Tensor:
        """idx: (B, T) token ids -> logits (B, T, vocab_size); position t reads only tokens t-w+1 .. t."""
        c = self.config
        check_ids(idx, c.vocab_size, c.context_length)
        B, T = idx.shape
        x = self.E(self.windows(idx.long()))  # (B, T, w, d_embed)
        x = x.reshape(B, T, c.window * c.d_embed)  # (B, T, w·d_embed): the slots side by side, oldest first
        h = self.drop(torch.tanh(self.W_h(x)))  # (B, T, d_hidden)
        return self.W_out(h)  # (B, T, vocab_size)

"""The position-wise feed-forward network: FFN(x) = act(x W_1 + b_1) W_2 + b_2, the same for every position."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from attnlab.nn.multihead import Record, hooked

ACTIVATIONS = {
    "relu": F.relu,
    "gelu": F.gelu,  # exact: x * Phi(x) (BERT)
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),  # GPT-2's tanh approximation ("gelu_new")
}


class FeedForward(nn.Module):
    """Two linear maps with an activation between; hidden width 4 * d_model unless told otherwise."""

    def __init__(
        self, d_model: int, d_ff: int | None = None, activation: str = "relu", dropout: float = 0.0, bias: bool = True
    ):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        d_ff = 4 * d_model if d_ff is None else d_ff
        self.activation = activation
        self.W_1 = nn.Linear(d_model, d_ff, bias=bias)
        self.W_2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, record: Record | None = None) -> Tensor:
        """x: (B, T, d_model) -> (B, T, d_model). record sees (and may replace) `hidden`, the d_ff neurons'
        activations: neuron j reads x through column j of W_1 (its key) and writes row j of W_2 (its value)."""
        hidden = ACTIVATIONS[self.activation](self.W_1(x))  # (B, T, d_model) -> (B, T, d_ff)
        hidden = hooked(record, "hidden", hidden)  # (B, T, d_ff)
        return hooked(record, "output", self.W_2(self.dropout(hidden)))  # (B, T, d_ff) -> (B, T, d_model)

"""LayerNorm, written out: normalize each position's features, then scale and shift."""

from __future__ import annotations

import torch
from torch import Tensor, nn


class LayerNorm(nn.Module):
    """y = gamma * (x - mean) / sqrt(var + eps) + beta, over the last dim only (one position at a time)."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: Tensor) -> Tensor:
        mean = x.mean(dim=-1, keepdim=True)  # (..., d) -> (..., 1)
        var = x.var(dim=-1, keepdim=True, unbiased=False)  # biased, as the paper's and torch's LayerNorm
        return self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta  # (..., d)

"""Positional information: sinusoidal (the 2017 paper), learned, and rotary (RoPE) on q and k.

Attention alone is a set operation: permute the inputs and the outputs permute the same way. Positions are
how order gets in.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def sinusoidal_positions(n_positions: int, d_model: int, base: float = 10000.0) -> Tensor:
    """PE[pos, 2i] = sin(pos / base^(2i/d)), PE[pos, 2i+1] = cos(pos / base^(2i/d)); shape (n_positions, d_model)."""
    if n_positions < 0 or d_model <= 0:
        raise ValueError(f"need n_positions >= 0 and d_model > 0, got n_positions={n_positions}, d_model={d_model}")
    pos = torch.arange(n_positions, dtype=torch.float64).unsqueeze(1)  # (n, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d/2),) the even dims 2i
    omega = torch.exp(-math.log(base) * two_i / d_model)  # omega_i = base^(-2i/d)
    pe = torch.zeros(n_positions, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * omega)  # (n, ceil(d/2))
    pe[:, 1::2] = torch.cos(pos * omega)[:, : d_model // 2]  # an odd d_model has one sin column more
    return pe.to(torch.get_default_dtype())


class SinusoidalPositions(nn.Module):
    """Adds the fixed sinusoidal table to the token embeddings (no parameters)."""

    def __init__(self, context_length: int, d_model: int):
        super().__init__()
        self.register_buffer("pe", sinusoidal_positions(context_length, d_model), persistent=False)

    def forward(self, positions: Tensor) -> Tensor:
        return self.pe[positions]  # (T,) -> (T, d_model)


class LearnedPositions(nn.Module):
    """One trained vector per position, as GPT-2 does."""

    def __init__(self, context_length: int, d_model: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(context_length, d_model) * 0.02)

    def forward(self, positions: Tensor) -> Tensor:
        return self.weight[positions]  # (T,) -> (T, d_model)


class RotaryEmbedding(nn.Module):
    """RoPE: rotate each pair (2i, 2i+1) of q and k by the angle pos * omega_i.

    Then q_m . k_n depends on positions only through m - n: the relative offset, as in the sinusoidal
    rotation property, but applied inside attention instead of added to the input.
    """

    def __init__(self, d_head: int, base: float = 10000.0):
        super().__init__()
        if d_head % 2:
            raise ValueError(f"rotary embeddings need an even head width, got d_head={d_head}")
        omega = base ** (-torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)  # (d_head/2,)
        self.register_buffer("omega", omega, persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """x: (B, H, T, d_head), the q or k of positions offset .. offset+T-1 -> same shape, rotated."""
        t = x.shape[-2]
        pos = torch.arange(offset, offset + t, dtype=torch.float64, device=x.device)
        angle = (pos[:, None] * self.omega[None, :]).to(x.dtype)  # (T, d_head/2)
        cos, sin = angle.cos(), angle.sin()
        x_even, x_odd = x[..., 0::2], x[..., 1::2]  # (B, H, T, d_head/2) each
        rotated_even = x_even * cos - x_odd * sin
        rotated_odd = x_even * sin + x_odd * cos
        return torch.stack((rotated_even, rotated_odd), dim=-1).flatten(-2)  # interleave back to (B, H, T, d_head)

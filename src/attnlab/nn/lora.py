"""LoRA (Hu et al. 2021): fine-tune a frozen linear map W through a low-rank update,

    h = x W^T + b + (α / r) · (x A^T) B^T,    A: (r, d_in),  B: (d_out, r),

so the trained weight is W + (α / r) B A, of rank at most r, and only r · (d_in + d_out) numbers a layer learn. B starts
at zero, so before training the model is exactly the one it wraps; A starts small and random (Kaiming, as the paper).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class LoRALinear(nn.Module):
    """A frozen nn.Linear plus its trainable low-rank update."""

    def __init__(self, base: nn.Linear, r: int = 4, alpha: float = 8.0):
        super().__init__()
        if not isinstance(r, int) or r <= 0:
            raise ValueError(f"LoRA rank r must be a positive int, got {r!r}")
        self.base = base
        for p in base.parameters():
            p.requires_grad_(False)
        self.r, self.scale = r, alpha / r
        self.A = nn.Parameter(torch.empty(r, base.in_features))  # (r, d_in)
        self.B = nn.Parameter(torch.zeros(base.out_features, r))  # (d_out, r): the update starts at zero
        nn.init.kaiming_uniform_(self.A, a=math.sqrt(5))

    def forward(self, x: Tensor) -> Tensor:
        return self.base(x) + self.scale * (x @ self.A.T) @ self.B.T  # (..., d_in) -> (..., d_out)

    def merged(self) -> nn.Linear:
        """One nn.Linear computing the same map: W + (α / r) B A (what a fine-tuned model ships)."""
        out = nn.Linear(self.base.in_features, self.base.out_features, bias=self.base.bias is not None)
        with torch.no_grad():
            out.weight.copy_(self.base.weight + self.scale * self.B @ self.A)
            if self.base.bias is not None:
                out.bias.copy_(self.base.bias)
        return out


def add_lora(model: nn.Module, r: int = 4, alpha: float = 8.0, targets: tuple[str, ...] = ("W_Q", "W_V")) -> list:
    """Freeze every weight of `model` and wrap each nn.Linear whose name is in `targets` (attention's W_Q and W_V by
    default, as the paper) in a LoRALinear, in place. Returns the trainable parameters (the A and B of each)."""
    for p in model.parameters():
        p.requires_grad_(False)
    wrapped = []
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if name in targets and isinstance(child, nn.Linear):
                lora = LoRALinear(child, r, alpha)
                setattr(module, name, lora)
                wrapped.append(lora)
    if not wrapped:
        raise ValueError(f"no nn.Linear named {', '.join(targets)} in the model")
    return [p for lora in wrapped for p in (lora.A, lora.B)]


__all__ = ["LoRALinear", "add_lora"]

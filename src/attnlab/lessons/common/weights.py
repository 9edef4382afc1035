"""Untrained weights drawn from a lesson's own generator, not torch's global one.

torch.manual_seed seeds one process-wide generator, and the web app runs lessons (a page, its figure, an API
call) and training on threads at once: weights drawn from it inside `seeded(seed)` change when another
thread draws at the same moment, and then the page and the API disagree. `redraw(model, seed)` draws every
random parameter again from a private torch.Generator, each kind with its constructor's own distribution.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def redraw(model: nn.Module, seed: int) -> nn.Module:
    """Linear: uniform(±1/sqrt(fan_in)) for weight and bias (torch's default); Embedding, learned positions:
    normal(0, 0.02) (attnlab.models.embedding); LayerNorm's ones and zeros are not random and stay."""
    from attnlab.nn import LayerNorm
    from attnlab.nn.positions import LearnedPositions

    g = torch.Generator().manual_seed(seed)
    drawn: set[int] = set()
    with torch.no_grad():
        for module in model.modules():  # a fixed order: the same draws for the same seed
            if isinstance(module, nn.Linear):
                bound = 1 / math.sqrt(module.in_features)
                for p in module.parameters(recurse=False):
                    p.copy_(torch.rand(p.shape, generator=g, dtype=torch.float64) * 2 * bound - bound)
                    drawn.add(id(p))
            elif isinstance(module, (nn.Embedding, LearnedPositions)):
                module.weight.copy_(torch.randn(module.weight.shape, generator=g, dtype=torch.float64) * 0.02)
                drawn.add(id(module.weight))
            elif isinstance(module, (LayerNorm, nn.LayerNorm)):
                drawn.update(id(p) for p in module.parameters(recurse=False))
    missed = [name for name, p in model.named_parameters() if id(p) not in drawn]
    if missed:
        raise ValueError(f"redraw does not know how to draw {missed[:3]}")
    return model


def small_gpt(vocab_size: int, context: int, seed: int, d_model: int = 64, n_layers: int = 2, n_heads: int = 4):
    """The lessons' small GPT (pre-LN, RoPE positions), its weights drawn from `seed` alone (redraw)."""
    from attnlab.models import GPT, GPTConfig

    config = GPTConfig(
        vocab_size=vocab_size,
        context_length=context,
        d_model=d_model,
        n_heads=n_heads,
        n_layers=n_layers,
        norm_first=True,
        positions="rope",
    )
    return redraw(GPT(config), seed)

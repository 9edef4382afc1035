"""How big a GPT is, counted before it exists: the one size limit for training a model and for loading one.

A run that asks for too much, or a checkpoint whose config.json describes too much (an edited one saying
n_layers 1e9), is refused before any memory is taken, with what it would have needed and the limit.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from attnlab.models import GPT

# The largest run `new_run` builds: refused before any memory is taken, with what it would have needed.
MAX_LAYERS = 256
MAX_TRAIN_BYTES = 8 * 2**30


@dataclass
class SizeEstimate:
    parameters: int
    buffers: int  # non-learned tensors (positions, masks), in elements
    train_bytes: int  # float32 weights + gradients + AdamW's two moments + activations of one step, roughly


def estimate_size(model_cfg, batch_size: int = 12) -> SizeEstimate:
    """What a GPT of this config holds, counted on the meta device (nothing is allocated).

    Every block is the same size, so one- and two-block models give the per-block count in closed form
    and no model with thousands of blocks has to be built just to count it.
    """
    with torch.device("meta"):
        one = GPT(dataclasses.replace(model_cfg, n_layers=1))
        two = GPT(dataclasses.replace(model_cfg, n_layers=2))

    def count(m):
        return (sum(p.numel() for p in m.parameters()), sum(b.numel() for b in m.buffers()))

    (p1, b1), (p2, b2) = count(one), count(two)
    layers = model_cfg.n_layers
    params, buffers = p1 + (layers - 1) * (p2 - p1), b1 + (layers - 1) * (b2 - b1)
    c = model_cfg
    t, d, d_ff = c.context_length, c.d_model, c.d_ff or 4 * c.d_model
    # per block and window: q, k, v, attention scores and weights (H·T²), FFN hidden, residual and norms
    activations = batch_size * layers * (2 * c.n_heads * t * t + t * (8 * d + 2 * d_ff)) + batch_size * t * 2 * c.vocab_size
    return SizeEstimate(params, buffers, 4 * (4 * params + buffers + activations))


def check_size(model_cfg, batch_size: int = 12) -> SizeEstimate:
    """ValueError saying what the model would need and the limit, when it is too big to train here."""
    if model_cfg.n_layers > MAX_LAYERS:
        raise ValueError(f"--layers {model_cfg.n_layers} is too many: the limit is {MAX_LAYERS}")
    size = estimate_size(model_cfg, batch_size)
    if size.train_bytes > MAX_TRAIN_BYTES:
        raise ValueError(
            f"this model is too big to train here: {model_cfg.n_layers} layers, d_model {model_cfg.d_model}, "
            f"context {model_cfg.context_length}, vocabulary {model_cfg.vocab_size} make {size.parameters:,} "
            f"parameters and need about {_gib(size.train_bytes)} to train (batch {batch_size}); "
            f"the limit is {_gib(MAX_TRAIN_BYTES)}. Use smaller --layers/--d-model/--context/--batch-size")
    return size


def _gib(n: int) -> str:
    return f"{n / 2**30:,.1f} GiB"


def check_loadable(model_cfg) -> SizeEstimate:
    """ValueError when a checkpoint's model is bigger than any attnlab trains (see check_size): a checkpoint
    attnlab wrote always passes, as it passed check_size with its batch of one or more windows."""
    c = model_cfg
    if c.n_layers > MAX_LAYERS:
        raise ValueError(f"{c.n_layers} layers are more than attnlab trains (at most {MAX_LAYERS})")
    size = estimate_size(c, batch_size=1)
    if size.train_bytes > MAX_TRAIN_BYTES:
        raise ValueError(f"{c.n_layers} layers, d_model {c.d_model}, context {c.context_length}, vocabulary "
                         f"{c.vocab_size} make {size.parameters:,} parameters, more than attnlab trains (it would "
                         f"need about {_gib(size.train_bytes)}; the limit is {_gib(MAX_TRAIN_BYTES)})")
    return size

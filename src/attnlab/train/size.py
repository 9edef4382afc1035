"""How big a GPT is, counted before it exists: the one size limit for training a model and for loading one.

A run that asks for too much, or a checkpoint whose config.json describes too much (an edited one saying
n_layers 1e9), is refused before any memory is taken, with what it would have needed and the limit.
Training counts exactly: a small model by building its one- and two-block versions (milliseconds), a large
one on the meta device, whose first use imports torch._dynamo (seconds on a small CPU: it was the
whole first visit of /pipeline, which sizes its model before building it). Loading counts by formula, a floor,
so that `attnlab generate` pays for neither.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from attnlab.models import GPT

# The largest run `new_run` builds: refused before any memory is taken, with what it would have needed.
MAX_LAYERS = 256
MAX_TRAIN_BYTES = 8 * 2**30
BUILD_TO_COUNT = 2_000_000  # a two-block model whose floor of weights and positions is below this is built to count


@dataclass
class SizeEstimate:
    parameters: int
    buffers: int  # non-learned tensors (positions, masks), in elements
    train_bytes: int  # float32 weights + gradients + AdamW's two moments + activations of one step, roughly


def estimate_size(model_cfg, batch_size: int = 12) -> SizeEstimate:
    """What a GPT of this config holds, counted exactly (a large one on the meta device: nothing allocated).

    Every block is the same size, so one- and two-block models give the per-block count in closed form
    and no model with thousands of blocks has to be built just to count it.
    """
    one_cfg, two_cfg = dataclasses.replace(model_cfg, n_layers=1), dataclasses.replace(model_cfg, n_layers=2)
    small = parameter_floor(two_cfg) + two_cfg.context_length * two_cfg.d_model <= BUILD_TO_COUNT
    # a small one is built for real, without touching the caller's random numbers
    with torch.random.fork_rng(devices=[]) if small else torch.device("meta"):
        one, two = GPT(one_cfg), GPT(two_cfg)

    def count(m):
        return (sum(p.numel() for p in m.parameters()), sum(b.numel() for b in m.buffers()))

    (p1, b1), (p2, b2) = count(one), count(two)
    layers = model_cfg.n_layers
    params, buffers = p1 + (layers - 1) * (p2 - p1), b1 + (layers - 1) * (b2 - b1)
    return SizeEstimate(params, buffers, 4 * (4 * params + buffers + _activations(model_cfg, batch_size)))


def _activations(c, batch_size: int) -> int:
    t, d, d_ff = c.context_length, c.d_model, c.d_ff or 4 * c.d_model
    # per block and window: q, k, v, attention scores and weights (H·T²), FFN hidden, residual and norms
    return (
        batch_size * c.n_layers * (2 * c.n_heads * t * t + t * (8 * d + 2 * d_ff)) + batch_size * t * 2 * c.vocab_size
    )


def parameter_floor(c) -> int:
    """At least this many parameters, whatever the options: the token table, learned positions, attention's four
    projections (W_Q, W_O d×d; W_K, W_V d×d_kv, d_kv = d with no GQA) and the FFN's two matrices in every block,
    and the LM head (biases and norms add a little). A part an ablation switches off is not there to count."""
    off = set(getattr(c, "ablations", ()))
    d, d_ff = c.d_model, c.d_ff or 4 * c.d_model
    d_kv = d if "one-head" in off else d // c.n_heads * (c.n_kv_heads or c.n_heads)
    positions = c.context_length * d if c.positions == "learned" and "no-positions" not in off else 0
    head = 0 if c.tie_weights else d * c.vocab_size
    attn = 0 if "ffn-only" in off else 2 * d * d + 2 * d * d_kv
    ffn = 0 if "attention-only" in off else 2 * d * d_ff
    return c.vocab_size * d + positions + c.n_layers * (attn + ffn) + head


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
            f"the limit is {_gib(MAX_TRAIN_BYTES)}. Use smaller --layers/--d-model/--context/--batch-size"
        )
    return size


def _gib(n: int) -> str:
    return f"{n / 2**30:,.1f} GiB"


def check_loadable(model_cfg) -> int:
    """The model's parameter floor, or a ValueError when it is bigger than any attnlab trains: a checkpoint
    attnlab wrote always passes, as it passed check_size (which counts more) with a batch of one or more."""
    c = model_cfg
    if c.n_layers > MAX_LAYERS:
        raise ValueError(f"{c.n_layers} layers are more than attnlab trains (at most {MAX_LAYERS})")
    floor = parameter_floor(c)
    need = 4 * (4 * floor + _activations(c, batch_size=1))
    if need > MAX_TRAIN_BYTES:
        raise ValueError(
            f"{c.n_layers} layers, d_model {c.d_model}, context {c.context_length}, vocabulary "
            f"{c.vocab_size} make at least {floor:,} parameters, more than attnlab trains (it would "
            f"need about {_gib(need)}; the limit is {_gib(MAX_TRAIN_BYTES)})"
        )
    return floor

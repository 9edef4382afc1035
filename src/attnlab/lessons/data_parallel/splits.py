"""What data parallelism sends, and what the other parallelisms split instead, as formulas (no implementation).

Data parallel (DDP), k ranks: every rank holds the whole model; each step the gradients (N numbers) are
all-reduced. A ring all-reduce is a reduce-scatter then an all-gather, each k − 1 hops of N/k numbers, so
every rank sends (and receives)

    2 · (k − 1)/k · N · bytes_per_gradient        (→ 2·N·bytes as k grows; 0 for k = 1)

ZeRO / FSDP (Rajbhandari et al. 2020), k ranks, keeps DDP's arithmetic but gives each rank 1/k of the training
state. Per parameter, in mixed precision: weights 2 bytes (fp16/bf16), gradients 2, optimizer 12 (an fp32 copy
of the weights, Adam's m and v); in fp32: 4 + 4 + 8. Both are 16 bytes a parameter under DDP.
    stage 1: optimizer state / k        stage 2: + gradients / k        stage 3 (FSDP): + weights / k
Stage 3 all-gathers the weights before each use (forward and backward): about 1.5× DDP's traffic.

Tensor parallel (Megatron-LM, Shoeybi et al. 2019), t ranks, splits every block's matrices: W_Q, W_K, W_V and
W_1 by columns (each rank holds H/t heads and d_ff/t hidden units; no communication between them), W_O and W_2
by rows (each rank's partial product is summed by one all-reduce). So each block's forward ends its attention and
its FFN with one all-reduce of the (tokens × d_model) activations: two per layer forward, two more backward.

Pipeline parallel (GPipe, Huang et al. 2019), p stages: rank i holds layers i·L/p … (i+1)·L/p − 1 and passes
its activations to the next. With m micro-batches per batch, the first stage waits p − 1 slots before the last
stage starts and the last idles p − 1 slots at the end; the idle share of the schedule (the bubble) is

    (p − 1) / (m + p − 1)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from attnlab.models.count import Architecture, count_params

PER_PARAM = {  # bytes a parameter holds during training: (weights, gradients, optimizer state)
    "mixed": (2, 2, 12),  # fp16/bf16 weights and gradients; fp32 master weights, Adam's m and v
    "fp32": (4, 4, 8),  # fp32 weights and gradients; Adam's m and v
}
STAGES = ("ddp", "zero1", "zero2", "zero3")
CARD_BYTES = 80e9  # an 80 GB accelerator (A100/H100 80GB)
ACTIVATION_BYTES = 2  # bf16 activations between tensor- or pipeline-parallel ranks


def ring_allreduce_bytes(n_bytes: float, k: int) -> float:
    """Bytes each of k ranks sends in a ring all-reduce of n_bytes: reduce-scatter + all-gather."""
    return 2 * (k - 1) / k * n_bytes


def per_param_bytes(stage: str, k: int, precision: str) -> float:
    """Training bytes per parameter on one of k ranks under DDP or a ZeRO stage."""
    w, g, o = PER_PARAM[precision]
    level = STAGES.index(stage)
    return (w / k if level >= 3 else w) + (g / k if level >= 2 else g) + (o / k if level >= 1 else o)


def bubble(p: int, m: int) -> float:
    """The idle share of a GPipe schedule of p stages and m micro-batches: (p − 1)/(m + p − 1)."""
    return (p - 1) / (m + p - 1)


@dataclass
class Stage:
    """One way to hold the training state on k ranks: bytes per parameter and per rank, in both precisions."""

    stage: str  # ddp | zero1 | zero2 | zero3
    label: str  # DDP, ZeRO-1, ...
    mixed: float  # bytes per parameter on one rank, mixed precision
    mixed_gb: float  # × N, in GB (10^9 bytes)
    mixed_fits: bool  # within one card
    fp32: float
    fp32_gb: float
    fp32_fits: bool


LABELS = {"ddp": "DDP", "zero1": "ZeRO-1", "zero2": "ZeRO-2", "zero3": "ZeRO-3 / FSDP"}


def stage(name: str, k: int, n: int) -> Stage:
    mixed, fp32 = per_param_bytes(name, k, "mixed"), per_param_bytes(name, k, "fp32")
    return Stage(
        name,
        LABELS[name],
        mixed,
        mixed * n / 1e9,
        mixed * n <= CARD_BYTES,
        fp32,
        fp32 * n / 1e9,
        fp32 * n <= CARD_BYTES,
    )


@dataclass
class Split:
    """The chosen published model split k ways, each way by formula."""

    model: str
    n_params: int  # by the lab's counter
    k: int
    stages: list[Stage]  # DDP and ZeRO 1-3
    grad_bytes_bf16: float  # N · 2: what DDP all-reduces each step in mixed precision
    ring_bytes: float  # each rank sends this per step: 2(k−1)/k · N · 2
    # tensor parallel over t ranks: t must divide the heads, the K/V heads and d_ff
    tp_max: int  # the largest t that does: gcd(H, H_kv, d_ff)
    tp: int  # the t used: the largest divisor of tp_max that is at most k
    tp_heads_per_rank: int
    tp_kv_heads_per_rank: int
    tp_ff_per_rank: int
    tp_block_bytes: float  # one block's weights on one rank, bf16: its attention and FFN matrices / t
    tp_allreduce_bytes: float  # one all-reduce of tokens × d_model activations (bf16)
    tp_layer_bytes: float  # each rank sends per layer, forward: 2 all-reduces, ring
    tokens: int  # b sequences × the model's context
    # pipeline parallel over p = min(k, layers) stages, m micro-batches
    pp: int
    pp_layers_per_stage: int  # the most layers a stage holds: ceil(L / p)
    micro: int
    bubble: float
    bubble_one: float  # with a single micro-batch: (p − 1)/p, the naive schedule
    pp_send_bytes: float  # one micro-batch's activations passed from a stage to the next (bf16)


def block_params(arch: Architecture) -> int:
    """One block's attention and FFN matrices (what tensor parallelism splits): d·(H + 2·H_kv)·d_head + d·d for
    W_Q, W_K, W_V and W_O; 2 or 3 matrices of d × d_ff for the FFN (biases and norms left out: they are small and
    every rank keeps them whole)."""
    d_head = arch.d_model // arch.heads
    kv = arch.kv_heads or arch.heads
    d_ff = arch.d_ff or 4 * arch.d_model
    return (
        arch.d_model * (arch.heads + 2 * kv) * d_head + arch.d_model**2 + (3 if arch.gated else 2) * arch.d_model * d_ff
    )


def split(name: str, arch: Architecture, k: int, b: int, micro: int) -> Split:
    """Every split of the published model `name` over k ranks, by the formulas above."""
    n = count_params(arch)
    stages = [stage(name, k, n) for name in STAGES]
    kv = arch.kv_heads or arch.heads
    d_ff = arch.d_ff or 4 * arch.d_model
    tp_max = math.gcd(arch.heads, kv, d_ff)
    tp = max(t for t in range(1, min(k, tp_max) + 1) if tp_max % t == 0)
    tokens = b * arch.context  # b sequences of the model's context
    allreduce = tokens * arch.d_model * ACTIVATION_BYTES  # (tokens, d_model) activations
    layers = arch.layers + arch.encoder_layers  # an encoder-decoder pipes both stacks
    pp = min(k, layers)
    return Split(
        name,
        n,
        k,
        stages,
        n * 2.0,
        ring_allreduce_bytes(n * 2.0, k),
        tp_max,
        tp,
        arch.heads // tp,
        kv // tp,
        d_ff // tp,
        block_params(arch) * ACTIVATION_BYTES / tp,
        float(allreduce),
        2 * ring_allreduce_bytes(allreduce, tp),
        tokens,
        pp,
        -(-layers // pp),
        micro,
        bubble(pp, micro),
        bubble(pp, 1),
        float(allreduce) / micro,
    )

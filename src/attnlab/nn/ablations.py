"""The parts a learner can switch off ("break it"): names a model config lists in `ablations`.

An ablation is read where its part lives (the embedding, the block, the attention), so an ablated model runs
the very same code path as the intact one with one piece left out; there is no second copy of the model.
"""

from __future__ import annotations

ABLATIONS: dict[str, str] = {
    "no-causal-mask": "attention reads every position, future ones too (training only sees the leak)",
    "no-positions": "no position vectors: the embedding is E[token] alone (and no RoPE)",
    "no-scale": "scores are Q K^T, not divided by sqrt(d_k)",
    "no-residual": "each sublayer's output replaces x instead of being added to it",
    "no-layernorm": "no LayerNorm anywhere (the blocks' and the final one)",
    "ffn-first": "each block runs its FFN before its attention",
    "one-head": "one head of width d_model instead of n_heads heads of d_model / n_heads",
    "attention-only": "blocks without their FFN",
    "ffn-only": "blocks without their attention (no position talks to another)",
}


def check_ablations(names) -> tuple[str, ...]:
    """The names as a sorted tuple without repeats, or a ValueError naming the unknown ones and the choices."""
    if isinstance(names, str):
        names = (names,)
    names = tuple(sorted(set(names)))
    unknown = [n for n in names if n not in ABLATIONS]
    if unknown:
        raise ValueError(f"unknown ablation(s) {', '.join(map(repr, unknown))}; choose from {', '.join(ABLATIONS)}")
    if {"attention-only", "ffn-only"} <= set(names):
        raise ValueError("attention-only and ffn-only together leave a block with nothing in it")
    return names

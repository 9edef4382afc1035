"""Which heads matter for one prediction, measured by ablation: Δ log p(target) when a head's output is removed.

    Δ_{l,h} = log p_ablated(target) - log p(target)        (negative: the head was helping)

Three ways to remove a head (Heimersheim & Nanda 2024 discuss when each misleads):
- "zero": its output set to 0 (off the distribution the model was trained on);
- "mean": its mean output over a reference batch (removes what is specific to this input);
- "resample": its output on other inputs (the reference rows), Δ averaged over them.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnlab.inspect.hooks import as_batch, replace_at, run_with
from attnlab.inspect.lens import n_layers

HOWS = ("zero", "mean", "resample")


def log_prob(logits: Tensor, target: int, position: int) -> Tensor:
    """log p(target) at `position` for each row: (B, T, vocab) -> (B,)."""
    return logits[:, position].log_softmax(-1)[:, target]


def head_site(layer: int) -> str:
    return f"layers.{layer}.attn.head_outputs"


def head_effects(
    model: nn.Module, ids, target: int, how: str = "zero", *, reference=None, position: int = -1
) -> Tensor:
    """Δ log p(target at position) per (layer, head): a (layers, heads) tensor. ids: one sequence.

    reference: (N, T_ref) ids for "mean" (any length) and "resample" (the same length T as ids).
    """
    if how not in HOWS:
        raise ValueError(f"how must be one of {HOWS}, got {how!r}")
    ids = as_batch(ids)
    if ids.shape[0] != 1:
        raise ValueError(f"head_effects reads one sequence, got a batch of {ids.shape[0]}")
    if how != "zero":
        if reference is None:
            raise ValueError(f'how="{how}" needs reference ids to take the head outputs from')
        reference = as_batch(reference)
        if how == "resample" and reference.shape[1] != ids.shape[1]:
            raise ValueError(
                f"resampling needs reference rows as long as ids ({ids.shape[1]}), got {reference.shape[1]}"
            )
    logits, _ = run_with(model, ids)
    base = log_prob(logits, target, position)  # (1,)
    ref = run_with(model, reference)[1] if reference is not None else None  # recorded once for every head
    L, H = n_layers(model), ref_heads(model)
    effects = torch.zeros(L, H)
    for layer in range(L):
        site = head_site(layer)
        for head in range(H):
            if how == "zero":
                value, rows = torch.zeros(1), ids
            elif how == "mean":
                value, rows = ref[site][:, head].mean((0, 1)), ids  # (d_k,): the average over rows and positions
            else:
                value, rows = ref[site], ids.expand(reference.shape[0], -1)  # (N, H, T, d_k): one per row
            ablated, _ = run_with(model, rows, {site: replace_at(value, head=head)})
            effects[layer, head] = (log_prob(ablated, target, position) - base).mean()
    return effects  # (L, H)


def ref_heads(model: nn.Module) -> int:
    """The heads of the first block's attention."""
    return model.blocks[0].attn.n_heads

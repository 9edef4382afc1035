"""Attention rollout (Abnar & Zuidema 2020): how much each input token flows into each position, following
attention through the layers and counting the residual connection as attention to oneself.

    Â_l = ½ (mean over heads of A_l) + ½ I,  rows renormalized;   R = Â_L · … · Â_1

It is a reading of the weights, not a measurement of effect: compare it with attnlab.inspect.effects.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnlab.inspect.hooks import as_batch, run_with
from attnlab.inspect.lens import n_layers


def rollout(model: nn.Module, ids, *, per_layer: bool = False) -> Tensor:
    """R (T, T) for one sequence: row i is how position i's final state draws on each input token (rows sum
    to 1). per_layer=True gives (layers, T, T), the product up to each layer."""
    ids = as_batch(ids)
    if ids.shape[0] != 1:
        raise ValueError(f"rollout reads one sequence, got a batch of {ids.shape[0]}")
    _, tr = run_with(model, ids)
    T = ids.shape[1]
    eye = torch.eye(T)
    R, steps = eye, []
    for layer in range(n_layers(model)):
        A = tr[f"layers.{layer}.attn.weights"][0].mean(0)  # (H, T, T) -> (T, T)
        A_hat = 0.5 * A + 0.5 * eye  # the residual stream carries the token itself
        A_hat = A_hat / A_hat.sum(-1, keepdim=True)
        R = A_hat @ R  # (T, T): later layers act on what earlier ones mixed
        steps.append(R)
    return torch.stack(steps) if per_layer else R

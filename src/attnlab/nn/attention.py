"""Scaled dot-product attention: softmax(Q K^T / sqrt(d_k)) V, written out.

Mask convention, everywhere in attnlab: a boolean mask where True = "this query may attend to this key".
Masked scores are set to -inf before the softmax, so their weights are exactly 0. A query row whose keys
are all masked has nothing to read; its weights (and so its output) are all 0 rather than NaN.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor


def check_mask(mask: Tensor, scores_shape: torch.Size) -> None:
    """Raise a ValueError unless `mask` is a boolean tensor that broadcasts to the scores' shape."""
    if mask.dtype != torch.bool:
        raise ValueError(f"mask must be a bool tensor (True = may attend), got dtype {mask.dtype}")
    try:
        torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        raise ValueError(
            f"mask shape {tuple(mask.shape)} does not broadcast to the scores' shape "
            f"{tuple(scores_shape)} (..., T_q, T_k)"
        ) from None
    if mask.dim() > len(scores_shape):
        raise ValueError(f"mask has {mask.dim()} dims, scores have {len(scores_shape)}: {tuple(scores_shape)}")


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    causal: bool = False,
    need_weights: bool = True,
    dropout_p: float = 0.0,
    record=None,
    scale: bool = True,
) -> tuple[Tensor, Tensor | None]:
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V.

    q: (..., T_q, d_k), k: (..., T_k, d_k), v: (..., T_k, d_v); mask broadcasts to (..., T_q, T_k).
    causal=True adds the causal mask (query i reads keys up to i; see `causal_mask` for T_k > T_q).
    Returns (output (..., T_q, d_v), weights (..., T_q, T_k)). With need_weights=False the fused
    `scaled_dot_product_attention` kernel is used and weights is None. `record(name, tensor)`, when given,
    receives the raw scores, the masked scores and the weights (it forces the explicit path).
    scale=False leaves out the division by sqrt(d_k) (the "no-scale" ablation): scores = Q K^T.
    """
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k need the same last dim d_k, got q {tuple(q.shape)} and k {tuple(k.shape)}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v need the same number of keys T_k, got k {tuple(k.shape)} and v {tuple(v.shape)}")
    scores_shape = torch.Size((*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2]))
    if mask is not None:
        check_mask(mask, scores_shape)

    if not need_weights and record is None:
        return sdpa_attention(q, k, v, mask, causal=causal, dropout_p=dropout_p, scale=scale), None
    if causal:
        mask = with_causal(mask, q.shape[-2], k.shape[-2], q.device)

    d_k = q.shape[-1]
    scores = (
        q @ k.transpose(-2, -1) / (math.sqrt(d_k) if scale else 1.0)
    )  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    if record is not None:
        record("scores", scores)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # masked scores -> -inf, so exp(-inf) = 0
        if record is not None:
            record("masked_scores", scores)
    weights = torch.softmax(scores, dim=-1)  # (..., T_q, T_k), each row sums to 1
    if mask is not None:
        # A row with every key masked is softmax(-inf, ..., -inf) = NaN; it read nothing, so give it zeros.
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    if record is not None:
        record("weights", weights)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    output = weights @ v  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)
    return output, weights


def sdpa_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    causal: bool = False,
    dropout_p: float = 0.0,
    scale: bool = True,
) -> Tensor:
    """The same computation through torch's fused kernel; no weights come back."""
    factor = None if scale else 1.0  # the kernel's own 1/sqrt(d_k), or none at all
    if causal and mask is None and q.shape[-2] == k.shape[-2]:
        # The kernel's own causal mode skips the masked half of the work; no row is ever empty.
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout_p, scale=factor)
    if causal:
        mask = with_causal(mask, q.shape[-2], k.shape[-2], q.device)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=factor)
    if mask is not None:
        # Match the explicit path: a query that may read no key outputs zeros (the kernel gives NaN).
        out = out.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return out


def causal_mask(t_q: int, t_k: int | None = None, device=None) -> Tensor:
    """(T_q, T_k) bool mask, True on and below the diagonal: query i may read keys 0..i.

    When T_k > T_q (a KV cache holding T_k - T_q earlier positions), query i sits at absolute position
    T_k - T_q + i and may read keys up to that position.
    """
    t_k = t_q if t_k is None else t_k
    return torch.ones(t_q, t_k, dtype=torch.bool, device=device).tril(diagonal=t_k - t_q)


def with_causal(mask: Tensor | None, t_q: int, t_k: int, device=None) -> Tensor:
    """The causal mask, and-ed with `mask` if there is one."""
    causal = causal_mask(t_q, t_k, device=device)
    return causal if mask is None else mask & causal

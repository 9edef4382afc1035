"""Sparse attention masks: which keys a query may read (True = may attend, as everywhere in attnlab).

Sliding window w (Longformer's local attention, Mistral's sliding window; causal): query i reads keys
max(0, i - w + 1) .. i, the w most recent positions including itself. One layer sees w - 1 positions back;
L layers stacked pass information L (w - 1) positions back, one window per layer.

Block-sparse (the layout block-sparse FlashAttention skips tile by tile; causal): positions are cut into
blocks of `block`; query block I reads key block J when J is one of its `local` most recent blocks
(I - local < J <= I) or one of the first `sinks` blocks (J < sinks: "attention sinks" every query keeps,
as StreamingLLM keeps the first tokens), and within those only keys j <= i. With local = 1 a query never
reads blocks sinks .. I - 1, and no number of layers helps: the sink blocks read only themselves.
Both return (T, T) bool masks for `attention(mask=...)` and `flash_attention(mask=...)`.
"""

from __future__ import annotations

import torch
from torch import Tensor


def sliding_window_mask(t: int, window: int, device=None) -> Tensor:
    """(T, T) bool: query i may read keys i - window + 1 .. i (causal, `window` positions including itself)."""
    if window < 1:
        raise ValueError(f"window must be at least 1 (a query reads itself), got {window}")
    i = torch.arange(t, device=device)[:, None]  # (T, 1) query positions
    j = torch.arange(t, device=device)[None, :]  # (1, T) key positions
    return (j <= i) & (j > i - window)  # (T, T)


def block_sparse_mask(t: int, block: int, *, local: int = 1, sinks: int = 1, device=None) -> Tensor:
    """(T, T) bool: query i may read key j <= i when block(j) is one of block(i)'s `local` most recent blocks
    or one of the first `sinks` blocks (block(x) = x // block)."""
    if block < 1 or local < 1 or sinks < 0:
        raise ValueError(f"need block >= 1, local >= 1, sinks >= 0; got block={block}, local={local}, sinks={sinks}")
    i = torch.arange(t, device=device)[:, None]  # (T, 1)
    j = torch.arange(t, device=device)[None, :]  # (1, T)
    bi, bj = i // block, j // block  # block indices
    return (j <= i) & ((bj > bi - local) | (bj < sinks))  # (T, T)


def block_layout(t: int, block: int, *, local: int = 1, sinks: int = 1) -> Tensor:
    """(ceil(T/block), ceil(T/block)) bool: which (query block, key block) pairs hold any allowed entry."""
    nb = -(-t // block)
    bi = torch.arange(nb)[:, None]
    bj = torch.arange(nb)[None, :]
    return (bj <= bi) & ((bj > bi - local) | (bj < sinks))

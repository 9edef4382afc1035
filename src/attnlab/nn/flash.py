"""FlashAttention's algorithm written out (Dao et al. 2022): softmax(Q K^T / sqrt(d_k)) V, tile by tile.

The scores are never held as one (T_q, T_k) matrix. Queries and keys are cut into tiles of `tile` rows; for
each query tile the key/value tiles stream past, and each query row keeps three running quantities:
  m   the largest score seen so far                      m_new = max(m, rowmax(S_ij))
  l   the sum of exp(score - m) seen so far              l_new = exp(m - m_new) l + rowsum(exp(S_ij - m_new))
  acc the unnormalised output, sum of exp(score - m) v   acc_new = exp(m - m_new) acc + exp(S_ij - m_new) V_j
When m grows, everything summed so far was scaled by exp(-m_old) and is rescaled by exp(m_old - m_new) (the
online softmax). After the last tile the output is acc / l, which equals softmax(scores) V exactly in exact
arithmetic. Only (tile, tile) score blocks exist, one at a time: memory O(T d + tile^2), not O(T^2).

This is the algorithm in plain PyTorch, not a kernel: the saving on a GPU comes from keeping the tiles in
on-chip memory, which Python cannot do; what it shows here is the arithmetic and the memory shape.

Mask convention as in attention.py: bool, True = may attend, broadcasting to (..., T_q, T_k). A tile whose
entries are all masked (or all in the future, with causal=True) is skipped without computing its scores:
that is what a causal or block-sparse mask saves. A row with no key to read outputs zeros.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from attnlab.nn.attention import check_mask


@dataclass
class TileStep:
    """The running state of one (query tile, key tile) step, after the tile was folded in."""

    rows: tuple[int, int]  # query positions [start, end)
    cols: tuple[int, int]  # key positions [start, end)
    scores: Tensor  # (..., rows, cols) the tile's scaled scores, masked ones -inf
    rescale: Tensor  # (..., rows) exp(m_old - m_new): how much the earlier sums shrink
    m: Tensor  # (..., rows) running max after this tile
    l: Tensor  # (..., rows) running sum of exp(score - m)
    acc: Tensor  # (..., rows, d_v) unnormalised output
    out: Tensor  # (..., rows, d_v) acc / l: the output if the keys stopped here


def _rows_cols(mask: Tensor, i0: int, i1: int, j0: int, j1: int) -> Tensor:
    """The mask's (rows, cols) block; a dim of size 1 (or a missing one) broadcasts, so it is not sliced."""
    cols = slice(None) if mask.shape[-1] == 1 else slice(j0, j1)
    if mask.dim() == 1:  # (T_k,): the same keys for every query
        return mask[cols]
    rows = slice(None) if mask.shape[-2] == 1 else slice(i0, i1)
    return mask[..., rows, cols]


def flash_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    tile: int = 64,
    *,
    causal: bool = False,
    trace: Callable[[TileStep], None] | None = None,
) -> Tensor:
    """softmax(Q K^T / sqrt(d_k)) V by tiles with the online softmax; equals `attention(q, k, v, mask)[0]`.

    q: (..., T_q, d_k), k: (..., T_k, d_k), v: (..., T_k, d_v); mask broadcasts to (..., T_q, T_k).
    causal=True: query i reads keys up to T_k - T_q + i (as `causal_mask`), and future tiles are skipped.
    trace(step), when given, receives a TileStep (detached copies) after every tile that was computed.
    """
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k need the same last dim d_k, got q {tuple(q.shape)} and k {tuple(k.shape)}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v need the same number of keys T_k, got k {tuple(k.shape)} and v {tuple(v.shape)}")
    if not isinstance(tile, int) or tile < 1:
        raise ValueError(f"tile must be a positive integer, got {tile!r}")
    t_q, t_k, d_k, d_v = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if mask is not None:
        check_mask(mask, torch.Size((*batch, t_q, t_k)))
        batch = torch.broadcast_shapes(batch, mask.shape[:-2])
    offset = t_k - t_q  # causal: query i sits at position offset + i
    sqrt_dk = math.sqrt(d_k)
    out = q.new_zeros((*batch, t_q, d_v))  # (..., T_q, d_v): written one query tile at a time

    for i0 in range(0, t_q, tile):
        i1 = min(i0 + tile, t_q)
        q_i = q[..., i0:i1, :]  # (..., Br, d_k) a view: no copy
        m = q.new_full((*batch, i1 - i0, 1), float("-inf"))  # (..., Br, 1) running max
        l = q.new_zeros((*batch, i1 - i0, 1))  # (..., Br, 1) running sum
        acc = q.new_zeros((*batch, i1 - i0, d_v))  # (..., Br, d_v) unnormalised output
        for j0 in range(0, t_k, tile):
            j1 = min(j0 + tile, t_k)
            if causal and j0 > offset + i1 - 1:
                break  # this tile and every later one lie in the future of every query in the tile
            allowed = None if mask is None else _rows_cols(mask, i0, i1, j0, j1)
            if causal:
                future = torch.arange(j0, j1, device=q.device) > offset + torch.arange(i0, i1, device=q.device)[:, None]
                allowed = ~future if allowed is None else allowed & ~future  # (Br, Bc)
            if allowed is not None and not bool(allowed.any()):
                continue  # a tile with nothing to read: its scores are never computed
            s = q_i @ k[..., j0:j1, :].transpose(-2, -1) / sqrt_dk  # (..., Br, d_k) @ (..., d_k, Bc) -> (..., Br, Bc)
            if allowed is not None:
                s = s.masked_fill(~allowed, float("-inf"))  # exp(-inf) = 0: masked keys add nothing
            # The max is only a shift the result does not depend on, so it carries no gradient (detached).
            m_new = torch.maximum(m, s.detach().amax(dim=-1, keepdim=True))  # (..., Br, 1)
            # A row masked so far has m_new = -inf; subtract 0 there so exp gives 0, not NaN.
            shift = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))  # (..., Br, 1)
            p = torch.exp(s - shift)  # (..., Br, Bc) exp(S_ij - m_new)
            rescale = torch.exp(m - shift)  # (..., Br, 1) exp(m_old - m_new): 0 on the first tile
            l = rescale * l + p.sum(dim=-1, keepdim=True)  # (..., Br, 1)
            acc = rescale * acc + p @ v[..., j0:j1, :]  # (..., Br, Bc) @ (..., Bc, d_v) -> (..., Br, d_v)
            m = m_new
            if trace is not None:
                safe = torch.where(l > 0, l, torch.ones_like(l))
                trace(
                    TileStep(
                        (i0, i1),
                        (j0, j1),
                        s.detach().clone(),
                        rescale.detach().squeeze(-1).clone(),
                        m.detach().squeeze(-1).clone(),
                        l.detach().squeeze(-1).clone(),
                        acc.detach().clone(),
                        (acc / safe).detach().clone(),
                    )
                )
            del s, p  # this tile's blocks go before the next tile's come: one (Br, Bc) block at a time
        # A row that read nothing has acc = 0 and l = 0: divide by 1 instead, its output stays 0.
        out[..., i0:i1, :] = acc / torch.where(l > 0, l, torch.ones_like(l))  # (..., Br, d_v)
    return out


def flash_steps(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, tile: int = 64, *, causal: bool = False
) -> tuple[Tensor, list[TileStep]]:
    """The output and every computed tile's running state, in the order the loop visits them."""
    steps: list[TileStep] = []
    out = flash_attention(q, k, v, mask, tile, causal=causal, trace=steps.append)
    return out, steps


def computed_scores(t_q: int, t_k: int, mask: Tensor | None = None, tile: int = 64, *, causal: bool = False) -> int:
    """How many score entries the tiled loop computes (rows x cols of every tile it does not skip), per batch
    element: the tile-level cost of a mask, counted by running the loop's own skipping rule on width-1 heads."""
    count = 0

    def add(step: TileStep) -> None:
        nonlocal count
        count += (step.rows[1] - step.rows[0]) * (step.cols[1] - step.cols[0])

    q, kv = torch.zeros(t_q, 1), torch.zeros(t_k, 1)  # width 1: the values do not matter, only the loop's visits
    flash_attention(q, kv, kv, mask, tile, causal=causal, trace=add)
    return count

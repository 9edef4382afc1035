"""Head patterns: what one attention map tends to do, as six scores in [0, 1], each averaged over query rows.

For an attention map A (T x T, row i = where query i reads; rows sum to 1):
    previous  = mean_{i>=1}   A[i, i-1]            reads the token just before
    next      = mean_{i<=T-2} A[i, i+1]            reads the token just after
    self      = mean_i        A[i, i]              reads itself
    first     = mean_i        A[i, 0]              reads the first token ([CLS] in BERT)
    sep_punct = mean_i  sum_{j marked} A[i, j]     reads [SEP] or punctuation (a "no-op" sink)
    broad     = mean_i  H(A[i]) / log T            spreads evenly (1 = uniform, 0 = one key only)
"""

from __future__ import annotations

import math
import unicodedata

import torch
from torch import Tensor

PATTERNS = ("previous", "next", "self", "first", "sep_punct", "broad")


def is_sep_or_punct(token: str) -> bool:
    """[SEP] or a token made only of punctuation (".", ",", "'", ...)."""
    if token == "[SEP]":
        return True
    piece = token.removeprefix("##")
    return bool(piece) and all(unicodedata.category(ch).startswith("P") for ch in piece)


def pattern_scores(weights: Tensor, marks: list[bool]) -> dict[str, Tensor]:
    """weights (..., T, T) -> {pattern: (...)}: one score per map (e.g. per layer and head)."""
    T = weights.shape[-1]
    if T < 2:
        raise ValueError(f"head patterns need at least 2 tokens, got {T}")
    w = weights.double()
    rows = torch.arange(T)
    mark = torch.tensor(marks, dtype=torch.bool)
    entropy = -(w * torch.log(w.clamp_min(1e-30))).sum(-1)  # (..., T): H(A[i]), 0 log 0 = 0
    return {
        "previous": w[..., rows[1:], rows[:-1]].mean(-1),
        "next": w[..., rows[:-1], rows[1:]].mean(-1),
        "self": w[..., rows, rows].mean(-1),
        "first": w[..., :, 0].mean(-1),
        "sep_punct": w[..., :, mark].sum(-1).mean(-1),
        "broad": (entropy / math.log(T)).mean(-1),
    }

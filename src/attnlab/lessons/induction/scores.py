"""The three readings of Olsson et al. (2022) on a sequence whose second half repeats its first: [r r], |r| = n.

A head's attention weights A (queries i, keys j ≤ i) are read at fixed offsets:
  prefix-matching  = mean over i in [n, 2n) of A[i, i - n + 1]  (the token right after the previous occurrence
                     of the current token: where an induction head looks, to copy what came next last time);
  previous-token   = mean over i in [1, 2n) of A[i, i - 1];
  chance           = the same mean of 1 / (i + 1): what a head attending uniformly to its i + 1 keys scores.
The in-context-learning score is the mean loss in the second half minus the mean loss in the first:
  icl = mean_{i in [n, 2n-1)} loss(i) − mean_{i in [0, n-1)} loss(i),  loss(i) = −log p(x_{i+1} | x_≤i),
the prediction of token n (the repeat's first, which nothing announces) left out of both. Negative: the model
predicts better once it can look back at the first half; Olsson et al. use loss(token 500) − loss(token 50).
"""

from __future__ import annotations

import torch
from torch import Tensor


def _at(weights: Tensor, queries: Tensor, keys: Tensor) -> Tensor:
    """weights (B, H, T, T) read at the (query, key) pairs and averaged over pairs and batch -> (H,)."""
    return weights[:, :, queries, keys].mean(dim=(0, 2))  # (B, H, P) -> (H,)


def prefix_matching(weights: Tensor, n: int) -> Tensor:
    """(B, H, 2n, 2n) attention on [r r] -> (H,): the mean weight from i to i - n + 1 over the second half."""
    q = torch.arange(n, 2 * n)  # (n,) queries in the repeat
    return _at(weights, q, q - n + 1)


def previous_token(weights: Tensor) -> Tensor:
    """(B, H, T, T) -> (H,): the mean weight from i to i - 1 over every query that has a previous token."""
    q = torch.arange(1, weights.shape[-1])  # (T - 1,)
    return _at(weights, q, q - 1)


def chance_prefix(n: int) -> float:
    """A uniform head's prefix-matching score: the mean of 1/(i+1) over the queries i in [n, 2n)."""
    return float(sum(1 / (i + 1) for i in range(n, 2 * n)) / n)


def chance_previous(T: int) -> float:
    """A uniform head's previous-token score: the mean of 1/(i+1) over the queries i in [1, T)."""
    return float(sum(1 / (i + 1) for i in range(1, T)) / (T - 1))


def icl_score(losses: Tensor, n: int) -> float:
    """losses (B, 2n - 1): loss(i) of predicting x_{i+1} -> mean over the second half minus the first."""
    return float(losses[:, n:].mean() - losses[:, : n - 1].mean())

"""Spearman's rank correlation, the one the lessons share (patching, word2vec, one-hot): Pearson's correlation of
the ranks, ties given their average rank, as scipy.stats.spearmanr computes it (tests/test_rank_correlation.py)."""

from __future__ import annotations

import numpy as np


def ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 0..n-1, ties given their average rank (as Spearman's correlation needs)."""
    r = np.empty(len(x))
    r[np.argsort(x, kind="mergesort")] = np.arange(len(x))
    _, inverse = np.unique(x, return_inverse=True)
    return (np.bincount(inverse, r) / np.bincount(inverse))[inverse]  # each tie group's mean rank


def spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    """Spearman's ρ of two equally long arrays (flattened). None where it is undefined: a side constant (one-hot
    cosines, all 0) or shorter than 3."""
    a, b = np.ravel(a), np.ravel(b)
    ra, rb = ranks(a), ranks(b)
    if len(a) < 3 or ra.std() == 0 or rb.std() == 0:
        return None
    return float(np.corrcoef(ra, rb)[0, 1])

"""What the word2vec lesson measures on a table of vectors: cosines, context vectors, how much nearest neighbours
share contexts, and analogies by 3CosAdd (Spearman's correlation: lessons.common.rank_correlation). NumPy in
float64; no model here."""

from __future__ import annotations

import numpy as np


def cosines(E: np.ndarray) -> np.ndarray:
    """(n, d) -> (n, n) cosine of every pair of rows (a zero row has cosine 0 with everything)."""
    norms = np.linalg.norm(E, axis=1, keepdims=True)  # (n, 1)
    unit = E / np.where(norms > 0, norms, 1.0)  # (n, d)
    return unit @ unit.T  # (n, n)


def context_counts(ids: np.ndarray, V: int, rows: list[int], window: int, skip: int | None) -> np.ndarray:
    """(len(rows), V): how often each character occurs within `window` places of each character of `rows`, the
    very pairs skip-gram trains on (none across the end-of-text mark `skip`)."""
    where = np.full(V, -1)
    where[rows] = np.arange(len(rows))
    counts = np.zeros((len(rows), V))
    for o in range(1, window + 1):
        for a, b in ((ids[:-o], ids[o:]), (ids[o:], ids[:-o])):  # centre a, context b, both directions
            keep = where[a] >= 0
            if skip is not None:
                keep &= (a != skip) & (b != skip)
            np.add.at(counts, (where[a[keep]], b[keep]), 1)
    return counts


def upper(M: np.ndarray) -> np.ndarray:
    """The entries above the diagonal: one value per pair of different characters."""
    return M[np.triu_indices(len(M), k=1)]


def neighbour_score(C: np.ndarray, S: np.ndarray, k: int) -> float:
    """Mean context similarity S[i, j] of each character's k nearest neighbours j by embedding cosine C: do the
    characters a table puts close together share their contexts?"""
    C = C.copy()
    np.fill_diagonal(C, -np.inf)  # a character is not its own neighbour
    top = np.argsort(-C, axis=1, kind="stable")[:, :k]  # (n, k)
    return float(np.take_along_axis(S, top, axis=1).mean())


def analogy(E: np.ndarray, a: int, b: int, c: int, candidates: list[int]) -> list[int]:
    """3CosAdd: the candidates (a, b, c left out) ordered by cosine with E[a] - E[b] + E[c], best first."""
    x = E[a] - E[b] + E[c]  # (d,)
    pool = [j for j in candidates if j not in (a, b, c)]
    norms = np.linalg.norm(E[pool], axis=1) * max(np.linalg.norm(x), 1e-300)  # (n,)
    cos = E[pool] @ x / np.where(norms > 0, norms, 1.0)  # (n,)
    return [pool[i] for i in np.argsort(-cos, kind="stable")]


def random_tables(n: int, d: int, count: int, seed: int) -> list[np.ndarray]:
    """`count` tables of n rows of N(0, 1) noise in d dimensions: vectors that learned nothing."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, d)) for _ in range(count)]

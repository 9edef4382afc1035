"""Attention as a soft dictionary lookup, and why a weight is not an importance.

A hard lookup (a Python dict, or argmax) takes exactly one value: one-hot weights. The soft lookup scores
the query against every key, turns the scores into weights with softmax and returns the weighted mean of
all values. The toy heads supply the query, keys and values, so the numbers are the toy lab's own; `disagreements`
finds the toy's own queries and heads where the largest weight and the largest contribution part.

What a key adds to the output is a_j v_j, not a_j: weights (0.9, 0.05, 0.05) on values of norms
(0.01, 100, 100) give contributions ||a_j v_j|| = (0.009, 5, 5); the "least attended" values dominate.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.lessons.common.bad_input import BadInput, shown
from attnlab.lessons.common.result import Matrix, Vector, tolist
from attnlab.lessons.toy.lesson import HEADS, TOKENS, toy_lab


@dataclass
class SoftLookup:
    head: int  # 0-based head whose query/keys/values are used
    head_name: str
    query: str  # the query token
    query_index: int
    q: Vector  # the query vector
    keys: Matrix  # K, (4, 2)
    values: Matrix  # V, (4, 2)
    tokens: list[str]
    scores: Vector  # q . k_j / sqrt(d_k)
    soft_weights: Vector  # softmax(scores)
    soft_output: Vector  # sum_j a_j v_j
    hard_index: int  # argmax_j scores: the one key a hard lookup takes
    hard_key: str
    hard_weights: Vector  # one-hot
    hard_output: Vector  # v_{hard_index}


def soft_lookup(query: str | int = "它", head: int = 1) -> SoftLookup:
    """Hard (argmax, one-hot) and soft (softmax) lookups of one query in one toy head (1-based head)."""
    if head not in range(1, len(HEADS) + 1):
        raise BadInput("toy.err.head", "head", n=len(HEADS), got=shown(head))
    lab = toy_lab(query, causal=False)
    h = lab.heads[head - 1]
    row = h.row
    scores = torch.tensor(row.scores, dtype=torch.float64)  # (4,), no mask here: every score is finite
    best = int(scores.argmax())
    one_hot = torch.zeros_like(scores)
    one_hot[best] = 1.0
    return SoftLookup(
        head=head - 1,
        head_name=h.name,
        query=lab.query,
        query_index=lab.query_index,
        q=row.q,
        keys=h.K,
        values=h.V,
        tokens=list(TOKENS),
        scores=row.scores,
        soft_weights=row.weights,
        soft_output=row.output,
        hard_index=best,
        hard_key=TOKENS[best],
        hard_weights=tolist(one_hot),
        hard_output=h.V[best],
    )


# Norms 0.01, 100, 100 (a 60-80-100 triangle), as in the question of 003 §1.3.
IMPORTANCE_WEIGHTS = (0.9, 0.05, 0.05)
IMPORTANCE_VALUES = ((0.01, 0.0), (60.0, 80.0), (-60.0, 80.0))


@dataclass
class WeightVsContribution:
    weights: Vector  # a_j
    values: Matrix  # v_j
    value_norms: Vector  # ||v_j||
    contributions: Matrix  # a_j v_j
    contribution_norms: Vector  # ||a_j v_j||
    contribution_shares: Vector  # ||a_j v_j|| / sum_k ||a_k v_k||
    output: Vector  # sum_j a_j v_j
    top_weight: int  # argmax a_j
    top_contribution: int  # argmax ||a_j v_j||


def weights_vs_contributions(weights=IMPORTANCE_WEIGHTS, values=IMPORTANCE_VALUES) -> WeightVsContribution:
    """Put each weight beside what its value actually adds to the output."""
    a = torch.tensor(weights, dtype=torch.float64)  # (n,)
    v = torch.tensor(values, dtype=torch.float64)  # (n, d_v)
    if a.dim() != 1 or v.dim() != 2 or v.shape[0] != a.shape[0]:
        raise ValueError(
            f"need n weights and n value vectors, got weights {tuple(a.shape)} and values {tuple(v.shape)}"
        )
    if not (torch.isfinite(a).all() and torch.isfinite(v).all()) or (a < 0).any() or abs(float(a.sum()) - 1) > 1e-9:
        raise ValueError(f"weights must be finite, non-negative and sum to 1, got {list(weights)}")
    terms = a[:, None] * v  # a_j v_j: (n, 1) * (n, d_v) -> (n, d_v)
    norms = terms.norm(dim=-1)  # (n,)
    return WeightVsContribution(
        weights=tolist(a),
        values=tolist(v),
        value_norms=tolist(v.norm(dim=-1)),
        contributions=tolist(terms),
        contribution_norms=tolist(norms),
        contribution_shares=tolist(norms / norms.sum()),
        output=tolist(terms.sum(dim=0)),
        top_weight=int(a.argmax()),
        top_contribution=int(norms.argmax()),
    )


TIE = 1e-9  # two weights closer than this are one weight: the weights do not rank those keys


@dataclass
class Disagreement:
    """A query and toy head where the contributions ‖a_j v_j‖ single out a key that the weights do not."""

    query: str
    head: int  # 1-based, as /lookup's form counts heads
    head_name: str
    top_weight: list[str]  # the key(s) with the largest weight (several when they tie)
    top_contribution: str  # the one key whose a_j v_j is longest
    weight: float  # that key's weight
    largest_weight: float
    contribution: float  # its ‖a_j v_j‖
    runner_up: float  # the next longest ‖a_j v_j‖


def disagreements() -> list[Disagreement]:
    """Every toy query and head where one a_j v_j is longest but the weights do not single out its key (another
    key weighs as much or more): the lab's own case of "a weight is not an importance"."""
    found = []
    for query in TOKENS:
        lab = toy_lab(query, causal=False)
        for head, h in enumerate(lab.heads, start=1):
            a, c = h.row.weights, h.row.contribution_norms
            most = max(a)
            tops = [j for j in range(len(a)) if most - a[j] <= TIE]
            order = sorted(range(len(c)), key=lambda j: -c[j])
            best, second = order[0], order[1]
            if tops == [best] or c[best] - c[second] <= TIE:  # agree, or no single longest contribution
                continue
            found.append(
                Disagreement(
                    query, head, h.name, [TOKENS[j] for j in tops], TOKENS[best], a[best], most, c[best], c[second]
                )
            )
    return found

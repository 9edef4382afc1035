"""Why divide by sqrt(d_k): with unit-variance components, Var(q.k) = d_k, and an unscaled softmax saturates.

Part 1 draws q, k with independent N(0, 1) components and measures the mean and variance of q.k for
d_k = 1 .. 512. Part 2 takes rows of such scores and compares softmax(s) with softmax(s / sqrt(d_k)): the
largest weight, the entropy, and the norm of the softmax Jacobian d p / d s taken with autograd (its
entries are p_i (delta_ij - p_j), which vanish as p approaches one-hot).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch

from attnlab.i18n import t
from attnlab.lessons.params import Claim, Param, check, lesson, memory_guard

PARAMS = (
    Param("d_k", "int", 64, 1, 1024, step=1, log=True, help="width of q and k"),
    Param("n_samples", "int", 20000, 100, 50000, step=100, log=True, help="(q, k) pairs drawn per d_k"),
    Param("n_keys", "int", 32, 2, 1024, step=1, log=True, help="keys in one softmax row"),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="random seed"),
)

SWEEP = tuple(2**i for i in range(10))  # d_k = 1, 2, 4, ..., 512
N_ROWS = 64  # softmax rows averaged per d_k


@dataclass
class DotStats:
    d_k: int
    mean: float  # sample mean of q.k
    var: float  # sample variance of q.k
    scaled_var: float  # sample variance of q.k / sqrt(d_k)


@dataclass
class SoftmaxStats:
    d_k: int
    max_weight_unscaled: float  # mean over rows of max_j p_j
    max_weight_scaled: float
    entropy_unscaled: float  # mean over rows, in nats; ln(n_keys) is uniform
    entropy_scaled: float
    grad_norm_unscaled: float  # mean over rows of ||d p / d s||_F, by autograd
    grad_norm_scaled: float


@dataclass
class SqrtDkResult:
    topic: str
    params: dict
    sweep: list[DotStats]  # d_k = 1 .. 512, and the chosen d_k
    chosen: DotStats
    softmax_sweep: list[SoftmaxStats]
    softmax: SoftmaxStats  # at the chosen d_k
    max_entropy: float  # ln(n_keys)
    example_scores: list[float]  # one row of q.k at the chosen d_k
    example_unscaled: list[float]  # softmax(scores)
    example_scaled: list[float]  # softmax(scores / sqrt(d_k))
    claims: list[Claim]


def _generator(seed: int, *salt: int) -> torch.Generator:
    """A generator per (seed, part, d_k, ...): each sweep point is the same whichever d_k is chosen."""
    x = seed
    for s in salt:
        x = (x * 1_000_003 + s) % 2**62
    return torch.Generator().manual_seed(x)


@lru_cache(maxsize=256)
def dot_stats(d_k: int, n_samples: int, seed: int) -> DotStats:
    """Mean and variance of q.k over n_samples independent pairs, q, k ~ N(0, I_{d_k}), drawn in chunks."""
    g = _generator(seed, 1, d_k)
    chunk = max(1, 2**21 // d_k)
    dots = []
    for start in range(0, n_samples, chunk):
        rows = min(chunk, n_samples - start)
        q = torch.randn(rows, d_k, generator=g, dtype=torch.float64)  # (rows, d_k)
        k = torch.randn(rows, d_k, generator=g, dtype=torch.float64)
        dots.append((q * k).sum(-1))  # (rows,) = q . k
    dot = torch.cat(dots)  # (n_samples,)
    var = dot.var(unbiased=True).item()
    return DotStats(d_k, dot.mean().item(), var, var / d_k)


def softmax_jacobian_norm(scores: torch.Tensor) -> torch.Tensor:
    """||d softmax(s) / d s||_F for each row of scores (R, n), by autograd: one backward pass per output."""
    s = scores.detach().clone().requires_grad_(True)
    p = torch.softmax(s, dim=-1)  # (R, n)
    squares = torch.zeros(s.shape[0], dtype=s.dtype)
    for i in range(s.shape[-1]):
        (row_grad,) = torch.autograd.grad(p[:, i].sum(), s, retain_graph=True)  # rows are independent
        squares += (row_grad**2).sum(-1)  # d p_i / d s_j, summed over j
    return squares.sqrt()


def entropy(p: torch.Tensor) -> torch.Tensor:
    return -(p * torch.log(p.clamp_min(1e-300))).sum(-1)


@lru_cache(maxsize=256)
def _softmax_rows(d_k: int, n_keys: int, seed: int) -> tuple[SoftmaxStats, list[float]]:
    g = _generator(seed, 2, d_k, n_keys)
    q = torch.randn(N_ROWS, 1, d_k, generator=g, dtype=torch.float64)  # (R, 1, d_k)
    k = torch.randn(N_ROWS, n_keys, d_k, generator=g, dtype=torch.float64)  # (R, n, d_k)
    scores = (q * k).sum(-1)  # (R, n): row r holds q_r . k_rj
    scaled = scores / math.sqrt(d_k)
    p_un, p_sc = torch.softmax(scores, -1), torch.softmax(scaled, -1)
    stats = SoftmaxStats(
        d_k,
        p_un.max(-1).values.mean().item(), p_sc.max(-1).values.mean().item(),
        entropy(p_un).mean().item(), entropy(p_sc).mean().item(),
        softmax_jacobian_norm(scores).mean().item(), softmax_jacobian_norm(scaled).mean().item(),
    )
    return stats, scores[0].tolist()


@lesson
def sqrt_dk(d_k: int = 64, n_samples: int = 20000, n_keys: int = 32, seed: int = 0, *, lang: str = "zh") -> SqrtDkResult:
    """Measure Var(q.k) against d_k and the softmax with and without the 1/sqrt(d_k) scale."""
    p = check(PARAMS, dict(d_k=d_k, n_samples=n_samples, n_keys=n_keys, seed=seed))
    d_k, n_samples, n_keys, seed = p["d_k"], p["n_samples"], p["n_keys"], p["seed"]
    limit = 256 * 2**20
    memory_guard(N_ROWS * n_keys * d_k * 8, f"{N_ROWS} rows of n_keys={n_keys} keys of width d_k={d_k}", limit, "n_keys",
                 n_keys, limit // (N_ROWS * d_k * 8))

    dims = sorted(set(SWEEP) | {d_k})
    sweep = [dot_stats(d, n_samples, seed) for d in dims]
    chosen = dot_stats(d_k, n_samples, seed)
    softmax_sweep = [_softmax_rows(d, n_keys, seed)[0] for d in dims]
    soft, example = _softmax_rows(d_k, n_keys, seed)
    example_t = torch.tensor(example, dtype=torch.float64)

    rel = abs(chosen.var / d_k - 1)
    mean_bound = 4 * math.sqrt(d_k / n_samples)  # four standard errors of the sample mean
    claims = [
        Claim("mean_zero", t("explain.sqrt_dk.claim.mean", lang, mean=chosen.mean, bound=mean_bound),
              chosen.mean, mean_bound, abs(chosen.mean) < mean_bound),
        Claim("variance", t("explain.sqrt_dk.claim.variance", lang, d_k=d_k, var=chosen.var, rel=rel),
              chosen.var, float(d_k), rel < 0.05),
        Claim("scaled_variance", t("explain.sqrt_dk.claim.scaled", lang, var=chosen.scaled_var),
              chosen.scaled_var, 1.0, abs(chosen.scaled_var - 1) < 0.05),
        Claim("saturation", t("explain.sqrt_dk.claim.saturation", lang, un=soft.max_weight_unscaled, sc=soft.max_weight_scaled),
              soft.max_weight_unscaled, soft.max_weight_scaled,
              soft.max_weight_unscaled >= soft.max_weight_scaled - 1e-12 and soft.entropy_unscaled <= soft.entropy_scaled + 1e-12),
    ]
    # The Jacobian norm first rises as the scores spread a little, then collapses once the softmax saturates;
    # the claim is about the saturated end, the largest d_k of the sweep, and the chosen d_k is shown beside it.
    far = softmax_sweep[-1]
    claims.append(Claim(
        "vanishing_gradient",
        t("explain.sqrt_dk.claim.gradient", lang, far=far.d_k, un=far.grad_norm_unscaled, sc=far.grad_norm_scaled,
          d_k=d_k, un_k=soft.grad_norm_unscaled, sc_k=soft.grad_norm_scaled),
        far.grad_norm_unscaled, far.grad_norm_scaled, far.grad_norm_unscaled < far.grad_norm_scaled,
    ))
    return SqrtDkResult(
        topic="sqrt-dk", params=p, sweep=sweep, chosen=chosen, softmax_sweep=softmax_sweep, softmax=soft,
        max_entropy=math.log(n_keys), example_scores=example,
        example_unscaled=torch.softmax(example_t, -1).tolist(),
        example_scaled=torch.softmax(example_t / math.sqrt(d_k), -1).tolist(),
        claims=claims,
    )

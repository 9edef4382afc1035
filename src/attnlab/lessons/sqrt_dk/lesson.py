"""Why divide by sqrt(d_k): with unit-variance components, Var(q.k) = d_k, and an unscaled softmax saturates.

Part 1 draws q, k with independent N(0, 1) components and measures the mean and variance of q.k for
d_k = 1 .. 512. Part 2 takes rows of such scores and compares softmax(s) with softmax(s / sqrt(d_k)): the
largest weight, the entropy, and the norm of the softmax Jacobian d p / d s = diag(p) - p p^T (autograd
gives the same matrix; the lesson checks it on one row). What is true of that gradient: it is at most
1 - sum p_j^2 <= 2 (1 - max p), so it vanishes as the softmax saturates; but a near-uniform softmax over
many keys passes little gradient too (uniform: sqrt(1/n - 1/n^2)), so the unscaled softmax passes less
gradient than the scaled one only from some d_k on, and that d_k grows with the number of keys. The lesson
measures that threshold instead of asserting a fixed one.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from functools import lru_cache

import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead, within
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, check, lesson, memory_guard
from attnlab.lessons.common.result import Shown

PARAMS = (
    Param("d_k", "int", 64, 1, 1024, step=1, log=True, help="width of q and k"),
    Param("n_samples", "int", 20000, 100, 50000, step=100, log=True, help="(q, k) pairs drawn per d_k"),
    Param("n_keys", "int", 32, 2, 1024, step=1, log=True, help="keys in one softmax row"),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="random seed"),
)
QUICK = {"n_samples": 1000, "n_keys": 8}
COURSE = ("lecture06", 50)  # the course map's section (web/course_map.py) and place in it
HEAVY = True

SWEEP = tuple(2**i for i in range(10))  # d_k = 1, 2, 4, ..., 512
N_ROWS = 64  # softmax rows averaged per d_k
SHARPER = 0.05  # "sharper" means the mean largest weight leads by 5 points: at d_k = 1 the two softmaxes tie
FADES = 0.10  # "the gradient fades" means at least 10% below the scaled softmax's
# Each claim's strongest null (lessons/common/nulls.py): at d_k = 1 dividing by sqrt(d_k) changes nothing.
NULLS = {
    "saturation": Null("d_k_1", d_k=1),
    "gradient_fades": Null("d_k_1", d_k=1),
    "saturation_grows": Null("d_k_1"),  # its control is the unscaled softmax at d_k = 1, in the same sweep
}


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
    grad_norm_unscaled: float  # mean over rows of ||d p / d s||_F
    grad_norm_scaled: float
    grad_bound_unscaled: float  # mean over rows of 1 - sum_j p_j^2, the bound on ||d p / d s||_F
    bound_holds: bool  # ||d p / d s||_F <= 1 - sum_j p_j^2 in every row, scaled and unscaled


@dataclass
class SqrtDkResult(Shown):
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
    example_autograd_diff: float  # max |autograd Jacobian - (diag(p) - p p^T)| on that row, unscaled
    grad_threshold: int | None  # smallest sweep d_k from which on the unscaled gradient is below the scaled one
    uniform_grad_norm: float  # ||d p / d s||_F of the uniform softmax over n_keys: sqrt(1/n - 1/n^2)
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


def softmax_jacobian(p: torch.Tensor) -> torch.Tensor:
    """d softmax(s) / d s = diag(p) - p p^T for each row of p (R, n) -> (R, n, n)."""
    return torch.diag_embed(p) - p[:, :, None] * p[:, None, :]


def _leave_one_out(p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(1 - p_i, sum_{j != i} p_j^2) for each entry of each row of p (R, n), without cancellation at the largest
    p_i: there both are summed over the other entries, so a row near one-hot keeps its tiny values exactly."""
    top = p.argmax(-1, keepdim=True)  # (R, 1)
    is_top = torch.zeros_like(p, dtype=torch.bool).scatter_(-1, top, True)  # (R, n)
    rest = p.masked_fill(is_top, 0)  # (R, n): every entry but the largest
    one_minus = torch.where(is_top, rest.sum(-1, keepdim=True), 1 - p)  # (R, n)
    others_sq = torch.where(is_top, (rest**2).sum(-1, keepdim=True), (p**2).sum(-1, keepdim=True) - p**2)  # (R, n)
    return one_minus, others_sq


def softmax_jacobian_norm(scores: torch.Tensor) -> torch.Tensor:
    """||d softmax(s) / d s||_F for each row of scores (R, n): the entries of diag(p) - p p^T are p_i (1 - p_i) on
    the diagonal and -p_i p_j off it, so ||J||_F^2 = sum_i p_i^2 ((1 - p_i)^2 + sum_{j != i} p_j^2). No n x n matrix
    is formed, so n = 1024 keys cost no more than a softmax."""
    p = torch.softmax(scores, -1)  # (R, n)
    one_minus, others_sq = _leave_one_out(p)
    return (p**2 * (one_minus**2 + others_sq)).sum(-1).sqrt()  # (R,)


def jacobian_bound(scores: torch.Tensor) -> torch.Tensor:
    """1 - sum_j p_j^2 = sum_i p_i (1 - p_i), the trace of the (positive semidefinite) Jacobian, for each row (R,):
    an upper bound on its Frobenius norm, and at most 2 (1 - max p)."""
    p = torch.softmax(scores, -1)
    one_minus, _ = _leave_one_out(p)
    return (p * one_minus).sum(-1)


def autograd_jacobian(scores: torch.Tensor) -> torch.Tensor:
    """The same Jacobian for one row (n,), taken by torch's autograd: the check of the closed form."""
    return torch.autograd.functional.jacobian(lambda s: torch.softmax(s, -1), scores, vectorize=True)  # (n, n)


def entropy(p: torch.Tensor) -> torch.Tensor:
    return -(p * torch.log(p.clamp_min(1e-300))).sum(-1)


@lru_cache(maxsize=256)
def _softmax_rows(d_k: int, n_keys: int, seed: int) -> tuple[SoftmaxStats, list[float]]:
    g = _generator(seed, 2, d_k, n_keys)
    q = torch.randn(N_ROWS, 1, d_k, generator=g, dtype=torch.float64)  # (R, 1, d_k)
    k = torch.randn(N_ROWS, n_keys, d_k, generator=g, dtype=torch.float64)  # (R, n, d_k)
    scores = (q * k).sum(-1)  # (R, n): row r holds q_r . k_rj
    scaled = scores / math.sqrt(d_k)
    p_un, p_sc = torch.softmax(scores, -1), torch.softmax(scaled, -1)  # (R, n)
    j_un, j_sc = softmax_jacobian_norm(scores), softmax_jacobian_norm(scaled)  # (R,)
    b_un, b_sc = jacobian_bound(scores), jacobian_bound(scaled)  # (R,): the trace of the Jacobian
    stats = SoftmaxStats(
        d_k,
        p_un.max(-1).values.mean().item(),
        p_sc.max(-1).values.mean().item(),
        entropy(p_un).mean().item(),
        entropy(p_sc).mean().item(),
        j_un.mean().item(),
        j_sc.mean().item(),
        b_un.mean().item(),
        bool((j_un <= b_un * (1 + 1e-9)).all() and (j_sc <= b_sc * (1 + 1e-9)).all()),  # rounding only
    )
    return stats, scores[0].tolist()


def _control(lang: str, name: str, **fields) -> str:
    return t(f"explain.sqrt_dk.control.{name}", lang, **fields)


LIMIT = 256 * 2**20  # the softmax rows' keys, float64


def cost(p: dict) -> Cost:
    """Refused before anything is drawn when the keys would not fit; else the chunk of q.k pairs (2^21 numbers,
    q, k and q*k) plus the rows of keys at the largest d_k drawn, three tensors of them."""
    d_k, n_keys = p["d_k"], p["n_keys"]
    memory_guard(
        N_ROWS * n_keys * d_k * 8,
        f"{N_ROWS} rows of n_keys={n_keys} keys of width d_k={d_k}",
        LIMIT,
        "n_keys",
        n_keys,
        LIMIT // (N_ROWS * d_k * 8),
    )
    return Cost.of_bytes(3 * 2**21 * 8 + 3 * N_ROWS * n_keys * max(d_k, *SWEEP) * 8)


@lesson
def sqrt_dk(
    d_k: int = 64, n_samples: int = 20000, n_keys: int = 32, seed: int = 0, *, lang: str = "zh"
) -> SqrtDkResult:
    """Measure Var(q.k) against d_k and the softmax with and without the 1/sqrt(d_k) scale."""
    p = check(PARAMS, dict(d_k=d_k, n_samples=n_samples, n_keys=n_keys, seed=seed))
    d_k, n_samples, n_keys, seed = p["d_k"], p["n_samples"], p["n_keys"], p["seed"]
    cost(p)

    dims = sorted(set(SWEEP) | {d_k})
    sweep = [dot_stats(d, n_samples, seed) for d in dims]
    chosen = dot_stats(d_k, n_samples, seed)
    softmax_sweep = [_softmax_rows(d, n_keys, seed)[0] for d in dims]
    soft, example = _softmax_rows(d_k, n_keys, seed)
    example_t = torch.tensor(example, dtype=torch.float64)

    rel = abs(chosen.var / d_k - 1)
    mean_bound = 4 * math.sqrt(d_k / n_samples)  # four standard errors of the sample mean
    # Var of the sample variance of q.k is (E[(q.k)^4] - d_k^2) / n = (2 d_k^2 + 6 d_k) / n: four standard errors,
    # relative to d_k. At n_samples = 20000 and d_k = 64 that is 4.1%; with 100 samples the variance is rough.
    var_bound = 4 * math.sqrt((2 + 6 / d_k) / n_samples)
    first, far = softmax_sweep[0], softmax_sweep[-1]  # d_k = 1 and the largest d_k of the sweep
    below = [s.grad_norm_unscaled < s.grad_norm_scaled for s in softmax_sweep]
    threshold = next((s.d_k for i, s in enumerate(softmax_sweep) if all(below[i:])), None)
    uniform = math.sqrt(1 / n_keys - 1 / n_keys**2)
    example_p = torch.softmax(torch.tensor(example, dtype=torch.float64), -1)
    autograd_diff = (
        (autograd_jacobian(torch.tensor(example, dtype=torch.float64)) - softmax_jacobian(example_p[None])[0])
        .abs()
        .max()
        .item()
    )
    violations = sum(not s.bound_holds for s in softmax_sweep)
    c = functools.partial(_control, lang)
    claims = [
        within(
            "mean_zero",
            t("explain.sqrt_dk.claim.mean", lang, mean=chosen.mean, bound=mean_bound),
            lang,
            measured=chosen.mean,
            expected=0.0,
            tol=mean_bound,
            control=c("mean"),
            values={"mean": chosen.mean},
        ),
        within(
            "variance",
            t("explain.sqrt_dk.claim.variance", lang, d_k=d_k, var=chosen.var, rel=rel, bound=var_bound),
            lang,
            measured=chosen.var,
            expected=float(d_k),
            tol=var_bound * d_k,
            control=c("variance"),
            values={"var": chosen.var, "rel": rel, "d_k": d_k},
        ),
        within(
            "scaled_variance",
            t("explain.sqrt_dk.claim.scaled", lang, var=chosen.scaled_var, bound=var_bound),
            lang,
            measured=chosen.scaled_var,
            expected=1.0,
            tol=var_bound,
            control=c("scaled"),
            values={"var": chosen.scaled_var},
        ),
        # softmax(beta s) sharpens as beta grows, so the unscaled softmax is never flatter; at d_k = 1 the two are the
        # same softmax, a tie, and the claim is not shown there.
        lead(
            "saturation",
            t(
                "explain.sqrt_dk.claim.saturation",
                lang,
                d_k=d_k,
                un=soft.max_weight_unscaled,
                sc=soft.max_weight_scaled,
                margin=SHARPER,
            ),
            lang,
            measured=soft.max_weight_unscaled,
            baseline=soft.max_weight_scaled,
            margin=SHARPER,
            control=c("scaled_softmax"),
            values={
                "unscaled": soft.max_weight_unscaled,
                "scaled": soft.max_weight_scaled,
                "entropy_unscaled": soft.entropy_unscaled,
                "entropy_scaled": soft.entropy_scaled,
            },
        ),
        lead(
            "saturation_grows",
            t(
                "explain.sqrt_dk.claim.saturation_grows",
                lang,
                lo=first.max_weight_unscaled,
                far=far.d_k,
                hi=far.max_weight_unscaled,
                sc=far.max_weight_scaled,
                margin=SHARPER,
            ),
            lang,
            measured=far.max_weight_unscaled,
            baseline=first.max_weight_unscaled,
            margin=SHARPER,
            control=c("d_k_1"),
            values={"d_k_1": first.max_weight_unscaled, "far": far.max_weight_unscaled, "far_d_k": far.d_k},
        ),
        within(
            "gradient_bound",
            t(
                "explain.sqrt_dk.claim.gradient_bound",
                lang,
                far=far.d_k,
                m=far.max_weight_unscaled,
                b=far.grad_bound_unscaled,
                g=far.grad_norm_unscaled,
            ),
            lang,
            measured=violations,
            expected=0,
            tol=0,
            control=c("bound"),
            values={"rows_over_bound": violations, "bound": far.grad_bound_unscaled, "norm": far.grad_norm_unscaled},
        ),
        within(
            "autograd",
            t("explain.sqrt_dk.claim.autograd", lang, diff=autograd_diff),
            lang,
            measured=autograd_diff,
            expected=0.0,
            tol=1e-12,
            control=c("autograd"),
            values={"diff": autograd_diff},
        ),
    ]
    # The course: without the scale "the gradient fades". True at the chosen d_k only past a threshold that grows
    # with n_keys (a near-uniform softmax over many keys passes little gradient too): measured, not assumed, and
    # said as contradicted where the unscaled gradient is the larger one.
    regime = dict(
        n=n_keys,
        far=far.d_k,
        un=far.grad_norm_unscaled,
        sc=far.grad_norm_scaled,
        d_k=d_k,
        un_k=soft.grad_norm_unscaled,
        sc_k=soft.grad_norm_scaled,
        u=uniform,
    )
    where = t(
        "explain.sqrt_dk.fades." + ("never" if threshold is None else "from"), lang, threshold=threshold, **regime
    )
    claims.append(
        lead(
            "gradient_fades",
            t("explain.sqrt_dk.claim.gradient_fades", lang, where=where, **regime),
            lang,
            measured=soft.grad_norm_unscaled,
            baseline=soft.grad_norm_scaled,
            lower=True,
            margin=FADES * soft.grad_norm_scaled,
            control=c("scaled_gradient"),
            values={
                "unscaled": soft.grad_norm_unscaled,
                "scaled": soft.grad_norm_scaled,
                "threshold": threshold,
                "uniform": uniform,
            },
            hint=None if threshold is None else t("explain.sqrt_dk.hint.fades", lang, threshold=threshold, n=n_keys),
        )
    )
    return SqrtDkResult(
        topic="sqrt-dk",
        params=p,
        sweep=sweep,
        chosen=chosen,
        softmax_sweep=softmax_sweep,
        softmax=soft,
        max_entropy=math.log(n_keys),
        example_scores=example,
        example_unscaled=torch.softmax(example_t, -1).tolist(),
        example_scaled=torch.softmax(example_t / math.sqrt(d_k), -1).tolist(),
        example_autograd_diff=autograd_diff,
        grad_threshold=threshold,
        uniform_grad_norm=uniform,
        claims=claims,
    )

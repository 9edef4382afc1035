"""Scaling laws fitted the way Hoffmann et al. 2022 do it (Chinchilla, approach 3), with an honest verdict.

    L(N, D) = E + A / N^alpha + B / D^beta        N: parameters, D: training tokens, L: held-out loss (nats)

Written in log space, log L = logsumexp(a - alpha·log N, b - beta·log D, e) with A = e^a, B = e^b, E = e^e,
so every parameter is free of sign constraints. The fit minimises a Huber loss (delta 1e-3, nearly L1: robust
to one bad run) between that and the measured log L, with L-BFGS in float64 started from the best points of
their grid. Uncertainty comes from the bootstrap: resample the runs with replacement, refit, take the 2.5% and
97.5% percentiles. The fits are independent, so all of them (the starts, then the resamples) run as one batch:
numpy arrays with a row per fit, the objective's gradient in closed form (tests hold it equal to autograd's,
and the minimiser equal to torch.optim.LBFGS's).

A fit is "shown" only when it could have failed: enough distinct sizes and budgets, a small residual, exponents
whose whole 95% interval clears a margin, and a size (and data) effect that the runs resolve.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

HUBER_DELTA = 1e-3  # Hoffmann et al.'s choice: quadratic only within 0.1% of the loss, linear (robust) beyond
MIN_SIZES = 4  # three sizes fix a three-parameter curve E + A/N^alpha exactly: a fourth is the first that can miss
MIN_BUDGETS = 2  # with one token budget B/D^beta is a constant, inseparable from E: beta is not measured at all
EXPONENT_MARGIN = 0.02  # N^-0.02 changes by 15% over a 1000x range of sizes: too flat to call a law
EFFECT_MARGIN = 0.02  # the term must move the loss by 2% across the measured range; else its exponent is unmeasured
MAX_RMS_LOG_RESIDUAL = 0.05  # a law that misses the runs by 5% of the loss (rms) does not describe them
MIN_BOOTSTRAP = 40  # the 2.5% percentile needs at least one resample below it
FIT_STEPS = 400  # good starts converge well within it; one creeping along a flat valley stops
BOOTSTRAP_STEPS = 200  # refits from the best fit converge well within it; a degenerate resample stops
STARTS = 8  # L-BFGS runs from this many of the best grid points; the best result is kept
# Where the law is absent its fit has no minimum: A -> 0 leaves alpha free, B and beta can climb together for
# ever (until B overflows a float). A quadratic wall beyond these bounds, zero inside (no sane
# fit comes near), stops the drift and keeps every number finite for JSON; the verdict still says not shown.
LOG_BOUND = 100.0  # |log A|, |log B|, |log E|: e^100 = 2.7e43 is still a float; alpha 5 at N 1e7 needs log A ~ 80
EXPONENT_BOUND = 5.0  # |alpha|, |beta|: published exponents lie between 0.05 and 0.6 (Kaplan 2020, Hoffmann 2022)
_WALL = 1e4  # the wall's stiffness, in the objective's units (delta^2)

# Hoffmann et al.'s grid of initial values (their appendix D), for a, b, e, alpha, beta
_GRID_AB, _GRID_E, _GRID_EXP = (
    (0.0, 5.0, 10.0, 15.0, 20.0, 25.0),
    (-1.0, -0.5, 0.0, 0.5, 1.0),
    (0.0, 0.5, 1.0, 1.5, 2.0),
)


@dataclass
class LawFit:
    E: float
    A: float
    B: float
    alpha: float
    beta: float
    alpha_interval: list[float]  # 95% bootstrap percentile interval [low, high]
    beta_interval: list[float]
    E_interval: list[float]
    size_effect_interval: list[float]  # share of the loss A/N^alpha moves across n_range, 95% interval
    data_effect_interval: list[float]  # share of the loss B/D^beta moves across d_range, 95% interval
    n_runs: int
    n_sizes: int  # distinct N
    n_budgets: int  # distinct D
    n_range: list[float]  # [min N, max N]: the sizes the fit is good for
    d_range: list[float]
    rms_log_residual: float  # sqrt(mean((log L - log L_fit)^2)) over the runs
    bootstrap: int
    shown: bool
    reason: str  # "shown" or why not: too-few-sizes, too-few-budgets, poor-fit, alpha-interval-includes-zero, ...


@dataclass
class PowerFit:
    E: float
    A: float
    alpha: float
    alpha_interval: list[float]
    E_interval: list[float]
    effect_interval: list[float]  # share of the loss A/x^alpha moves across x_range, 95% interval
    n_runs: int
    n_points: int  # distinct x
    x_range: list[float]
    rms_log_residual: float
    bootstrap: int
    shown: bool
    reason: str  # "shown", too-few-points, poor-fit, alpha-interval-includes-zero, effect-not-resolved


@dataclass
class Optimum:
    flops: float  # C = 6·N·D
    n_params: float
    tokens: float
    tokens_per_param: float
    loss: float  # the fitted L at (n_params, tokens)


# ---- the law, in log space, and its Huber objective --------------------------------------------------------------


def _log_terms(theta, log_x):
    """theta (S, 2J+1) = a_1..a_J, e, alpha_1..alpha_J for S fits; log_x (J, R): J variables over R runs."""
    j = log_x.shape[0]
    amp, e, expo = theta[:, :j, None], theta[:, j, None, None], theta[:, j + 1 :, None]  # (S,J,1) (S,1,1) (S,J,1)
    power_terms = amp - expo * log_x  # (S, J, R): log(A_j / x_j^alpha_j)
    return np.concatenate([power_terms, np.broadcast_to(e, (len(theta), 1, log_x.shape[1]))], 1)  # (S, J+1, R)


def _log_predict(theta, log_x):
    terms = _log_terms(theta, log_x)  # (S, J+1, R), the last one log E
    top = terms.max(1)  # (S, R) shift: exp never overflows
    return top + np.log(np.exp(terms - top[:, None]).sum(1)), terms  # (S, R): log L = log(sum of the terms' exp)


def _objective(theta, log_x, log_loss, weights):
    """Huber(log L_fit - log L) summed over runs, per fit, with its gradient in closed form.

    theta (S, P); log_x (J, R); log_loss (R,); weights (S, R) or (1, R): a run's copies in a bootstrap resample.
    In units of delta^2 (0.5·u^2 or |u| - 0.5, for u = residual/delta), so tolerances read as plain numbers.
    """
    log_pred, terms = _log_predict(theta, log_x)  # (S, R), (S, J+1, R)
    u = (log_pred - log_loss) / HUBER_DELTA  # (S, R) residual in units of delta
    abs_u = np.abs(u)
    f = (weights * np.where(abs_u < 1, 0.5 * u * u, abs_u - 0.5)).sum(-1)  # (S,)
    df_dlog = weights * np.clip(u, -1, 1) / HUBER_DELTA  # (S, R)
    share = np.exp(terms - log_pred[:, None])  # (S, J+1, R): each term's share of L = d log L / d term
    df_dterm = df_dlog[:, None] * share  # (S, J+1, R)
    g_amp, g_e = df_dterm[:, :-1].sum(-1), df_dterm[:, -1:].sum(-1)  # (S, J), (S, 1)
    g_expo = -(df_dterm[:, :-1] * log_x).sum(-1)  # (S, J)
    beyond = np.maximum(np.abs(theta) - _bounds(log_x.shape[0]), 0.0)  # (S, P): 0 inside the box
    f_wall, g_wall = _WALL * (beyond**2).sum(-1), 2 * _WALL * beyond * np.sign(theta)
    return f + f_wall, np.concatenate([g_amp, g_e, g_expo], 1) + g_wall  # (S,), (S, P)


def _bounds(j: int):
    """|a|, |e| <= LOG_BOUND and |alpha| <= EXPONENT_BOUND, for a law in j variables."""
    return np.array([LOG_BOUND] * (j + 1) + [EXPONENT_BOUND] * j)  # (2j+1,)


# ---- fitting ---------------------------------------------------------------------------------------------------


def _lbfgs(theta0, value_and_grad, max_iter: int):
    """L-BFGS on S independent fits in lockstep (Nocedal & Wright, algorithms 7.4 and 3.1): each row keeps its own
    history, step length and stopping test, so S refits cost one batched evaluation per step.

    Why not torch.optim.LBFGS: stacking the fits into one tensor couples them through its one line search and
    history, and it does not converge where each fit alone does; alone, each fit takes hundreds of evaluations,
    each paying torch's per-call overhead: minutes for a bootstrap on a busy CPU. The tests hold this equal to
    torch.optim.LBFGS run on each fit alone.
    """
    x = np.array(theta0, dtype=np.float64)  # (S, P)
    f, g = value_and_grad(x)  # (S,), (S, P)
    history: list[tuple] = []  # (s, y, rho) per step, each row its own; rho = 0 where a row skipped the update
    gamma = 1 / np.maximum(1.0, np.abs(g).sum(-1))  # (S,) first step scale, as torch.optim.LBFGS takes it
    active = np.isfinite(f)
    for _ in range(max_iter):
        d = -_two_loop(g, history, gamma)  # (S, P) search direction
        d = np.where(((g * d).sum(-1) < 0)[:, None], d, -gamma[:, None] * g)  # not downhill: steepest descent
        d = np.where(active[:, None], d, 0.0)  # frozen rows do not move
        slope = (g * d).sum(-1)  # (S,) directional derivative
        t, f_new, g_new = _backtrack(value_and_grad, x, f, g, d, slope, active)  # t (S,): 0 where f never fell
        x_new = x + t[:, None] * d
        s, y = x_new - x, g_new - g  # (S, P)
        sy, yy = (s * y).sum(-1), (y * y).sum(-1)  # (S,) curvature along s; y·y
        ok = sy > 1e-10 * np.sqrt((s * s).sum(-1) * yy)  # clearly positive, relative to the step, or skipped
        history = (history + [(s, y, np.where(ok, 1 / np.where(ok, sy, 1.0), 0.0))])[-_HISTORY:]
        gamma = np.where(ok, sy / np.where(ok, yy, 1.0), gamma)
        stalled = np.abs(f - f_new) <= _TOL_CHANGE * (1 + np.abs(f_new))
        done = (t == 0) | stalled | (np.abs(g_new).max(-1) <= _TOL_GRAD)
        x, f, g, active = x_new, f_new, g_new, active & ~done
        if not active.any():
            break
    return x


_HISTORY, _TOL_CHANGE, _TOL_GRAD = 10, 1e-12, 1e-9  # f in units of delta^2: 1e-12 of it is far below any noise


def _two_loop(g, history, gamma):
    q, coefs = g, []  # (S, P)
    for s, y, rho in reversed(history):
        a = rho * (s * q).sum(-1)  # (S,)
        q = q - a[:, None] * y
        coefs.append(a)
    r = gamma[:, None] * q
    for (s, y, rho), a in zip(history, reversed(coefs)):
        b = rho * (y * r).sum(-1)
        r = r + (a - b)[:, None] * s
    return r  # (S, P): the inverse-Hessian estimate times g


def _backtrack(value_and_grad, x, f, g, d, slope, active, tries=40):
    """Per row, the first step length from 1 down with sufficient decrease (Armijo, c1 = 1e-4), and f and g there.
    A refused step shrinks to the minimum of the parabola through f, the slope and the refused value, kept within
    [0.1, 0.5] of it (Nocedal & Wright 3.5); an overflowing one by 10."""
    t, f_new, g_new = active.astype(np.float64), f, g  # (S,), (S,), (S, P): frozen rows keep step 0
    settled = ~active
    for _ in range(tries):
        with np.errstate(over="ignore", invalid="ignore"):  # a step too long may overflow: it is simply refused
            f_try, g_try = value_and_grad(x + t[:, None] * d)
        finite = np.isfinite(f_try)
        fresh = ~settled & finite & (f_try <= f + 1e-4 * t * slope)
        f_new, g_new = np.where(fresh, f_try, f_new), np.where(fresh[:, None], g_try, g_new)
        settled = settled | fresh
        if settled.all():
            return t, f_new, g_new
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            parabola = -slope * t * t / (2 * (f_try - f - slope * t))  # (S,) where the fitted parabola bottoms out
        shorter = np.where(finite, np.clip(np.nan_to_num(parabola, nan=0.5 * t), 0.1 * t, 0.5 * t), 0.1 * t)
        t = np.where(settled, t, shorter)
    return np.where(settled, t, 0.0), f_new, g_new


def _best_fit(log_x, log_loss, grid):
    """The grid point with the lowest objective is not enough (the grid is coarse): polish the best few, keep one."""
    ones = np.ones((1, len(log_loss)))  # (1, R)

    def value_and_grad(theta):
        return _objective(theta, log_x, log_loss, ones)

    starts = grid[np.argsort(value_and_grad(grid)[0])[:STARTS]]  # (STARTS, P)
    fitted = _lbfgs(starts, value_and_grad, FIT_STEPS)  # (STARTS, P)
    final = value_and_grad(fitted)[0]
    return fitted[np.argmin(np.where(np.isfinite(final), final, np.inf))]  # (P,)


def _bootstrap(log_x, log_loss, best, n_resamples, seed):
    """Refit on n_resamples resamples of the runs (as run weights), all from the best fit, in one batch."""
    runs = len(log_loss)
    picks = np.random.default_rng(seed).integers(0, runs, size=(n_resamples, runs))  # (S, R) run indices
    weights = np.stack([np.bincount(p, minlength=runs) for p in picks]).astype(np.float64)  # (S, R)

    def value_and_grad(theta):
        return _objective(theta, log_x, log_loss, weights)

    return _lbfgs(np.repeat(best[None], n_resamples, 0), value_and_grad, BOOTSTRAP_STEPS)  # (S, P)


def _interval(values) -> list[float]:
    values = values[np.isfinite(values)]
    if values.size == 0:
        return [math.nan, math.nan]
    low, high = np.percentile(values, [2.5, 97.5])
    return [float(low), float(high)]


def _effect(log_amp, exponent, lo, hi, mean_loss):
    """The share of the loss a term A/x^exponent moves between x = lo and x = hi, per resample."""
    return (np.exp(log_amp - exponent * math.log(lo)) - np.exp(log_amp - exponent * math.log(hi))) / mean_loss


def _rms(theta, log_x, log_loss) -> float:
    log_pred = _log_predict(theta[None], log_x)[0][0]  # (R,)
    return float(np.sqrt(((log_pred - log_loss) ** 2).mean()))


# ---- public ----------------------------------------------------------------------------------------------------


def fit_law(n_params, tokens, losses, *, bootstrap: int = 200, seed: int = 0) -> LawFit:
    """Chinchilla's L(N, D) = E + A/N^alpha + B/D^beta over runs (N_i, D_i, L_i), with 95% bootstrap intervals."""
    n_arr, d_arr, l_arr = _check_runs({"n_params": n_params, "tokens": tokens, "losses": losses}, min_runs=5)
    _check_bootstrap(bootstrap)
    log_x, log_loss = np.log(np.stack([n_arr, d_arr])), np.log(l_arr)  # (2, R), (R,)
    grid = np.array(list(itertools.product(_GRID_AB, _GRID_AB, _GRID_E, _GRID_EXP, _GRID_EXP)))  # (4500, 5)
    best = _best_fit(log_x, log_loss, grid)  # (5,): a, b, e, alpha, beta
    boot = _bootstrap(log_x, log_loss, best, bootstrap, seed)  # (S, 5)
    a, b, e, alpha, beta = (float(v) for v in best)
    n_range, d_range = [float(n_arr.min()), float(n_arr.max())], [float(d_arr.min()), float(d_arr.max())]
    mean_loss = float(l_arr.mean())
    fit = LawFit(
        E=math.exp(e),
        A=math.exp(a),
        B=math.exp(b),
        alpha=alpha,
        beta=beta,
        alpha_interval=_interval(boot[:, 3]),
        beta_interval=_interval(boot[:, 4]),
        E_interval=_interval(np.exp(boot[:, 2])),
        size_effect_interval=_interval(_effect(boot[:, 0], boot[:, 3], *n_range, mean_loss)),
        data_effect_interval=_interval(_effect(boot[:, 1], boot[:, 4], *d_range, mean_loss)),
        n_runs=len(l_arr),
        n_sizes=len(np.unique(n_arr)),
        n_budgets=len(np.unique(d_arr)),
        n_range=n_range,
        d_range=d_range,
        rms_log_residual=_rms(best, log_x, log_loss),
        bootstrap=bootstrap,
        shown=False,
        reason="",
    )
    fit.reason = _law_verdict(fit)
    fit.shown = fit.reason == "shown"
    return fit


def fit_power(x, losses, *, bootstrap: int = 200, seed: int = 0) -> PowerFit:
    """The one-variable law L = E + A/x^alpha (x: parameters, tokens or compute), same method and verdict."""
    x_arr, l_arr = _check_runs({"x": x, "losses": losses}, min_runs=3)
    _check_bootstrap(bootstrap)
    log_x, log_loss = np.log(x_arr)[None], np.log(l_arr)  # (1, R), (R,)
    grid = np.array(list(itertools.product(_GRID_AB, _GRID_E, _GRID_EXP)))  # (150, 3)
    best = _best_fit(log_x, log_loss, grid)  # (3,): a, e, alpha
    boot = _bootstrap(log_x, log_loss, best, bootstrap, seed)  # (S, 3)
    a, e, alpha = (float(v) for v in best)
    x_range = [float(x_arr.min()), float(x_arr.max())]
    fit = PowerFit(
        E=math.exp(e),
        A=math.exp(a),
        alpha=alpha,
        alpha_interval=_interval(boot[:, 2]),
        E_interval=_interval(np.exp(boot[:, 1])),
        effect_interval=_interval(_effect(boot[:, 0], boot[:, 2], *x_range, float(l_arr.mean()))),
        n_runs=len(l_arr),
        n_points=len(np.unique(x_arr)),
        x_range=x_range,
        rms_log_residual=_rms(best, log_x, log_loss),
        bootstrap=bootstrap,
        shown=False,
        reason="",
    )
    fit.reason = _power_verdict(fit)
    fit.shown = fit.reason == "shown"
    return fit


def _resolved(interval, margin) -> bool:
    return all(math.isfinite(v) for v in interval) and interval[0] > margin


def _law_verdict(fit: LawFit) -> str:
    if fit.n_sizes < MIN_SIZES:
        return "too-few-sizes"
    if fit.n_budgets < MIN_BUDGETS:
        return "too-few-budgets"
    if not fit.rms_log_residual < MAX_RMS_LOG_RESIDUAL:
        return "poor-fit"
    if not _resolved(fit.alpha_interval, EXPONENT_MARGIN):
        return "alpha-interval-includes-zero"
    if not _resolved(fit.beta_interval, EXPONENT_MARGIN):
        return "beta-interval-includes-zero"
    if not _resolved(fit.size_effect_interval, EFFECT_MARGIN):
        return "size-effect-not-resolved"  # A -> 0 leaves alpha free to sit anywhere: the interval alone can lie
    if not _resolved(fit.data_effect_interval, EFFECT_MARGIN):
        return "data-effect-not-resolved"
    return "shown"


def _power_verdict(fit: PowerFit) -> str:
    if fit.n_points < MIN_SIZES:
        return "too-few-points"
    if not fit.rms_log_residual < MAX_RMS_LOG_RESIDUAL:
        return "poor-fit"
    if not _resolved(fit.alpha_interval, EXPONENT_MARGIN):
        return "alpha-interval-includes-zero"
    if not _resolved(fit.effect_interval, EFFECT_MARGIN):
        return "effect-not-resolved"
    return "shown"


def compute_optimal(fit: LawFit, flops):
    """The N and D minimising the fitted L at compute C = 6·N·D (closed form); an Optimum, or a list for a list."""
    if not (fit.alpha > 0 and fit.beta > 0 and fit.A > 0 and fit.B > 0):
        raise ValueError(
            f"compute_optimal needs alpha, beta, A, B > 0; the fit has alpha={fit.alpha}, "
            f"beta={fit.beta}, A={fit.A}, B={fit.B}"
        )
    one = np.ndim(flops) == 0
    budgets = _check_column("flops", [flops] if one else flops)
    a, b = fit.alpha, fit.beta
    g = (a * fit.A / (b * fit.B)) ** (1 / (a + b))  # where d/dN of A/N^a + B/(C/6N)^b vanishes
    out = []
    for c in budgets:
        n_opt = g * (c / 6) ** (b / (a + b))
        d_opt = (c / 6) / n_opt
        loss = fit.E + fit.A / n_opt**a + fit.B / d_opt**b
        out.append(Optimum(flops=float(c), n_params=n_opt, tokens=d_opt, tokens_per_param=d_opt / n_opt, loss=loss))
    return out[0] if one else out


def isoflop_minima(n_params, tokens, flops_budget_labels, losses) -> list[dict]:
    """The measured optimum per compute budget: the run with the lowest loss under each label, by budget."""
    n_arr, d_arr, l_arr = _check_runs(
        {"n_params": n_params, "tokens": tokens, "losses": losses}, min_runs=1, why="one to pick"
    )
    labels = _check_column("flops_budget_labels", flops_budget_labels)
    if len(labels) != len(l_arr):
        raise ValueError(f"expected one flops_budget_label per run ({len(l_arr)}), got {len(labels)}")
    best: dict[float, int] = {}
    for i, label in enumerate(labels.tolist()):
        if label not in best or l_arr[i] < l_arr[best[label]]:
            best[label] = i
    return [
        {
            "budget": label,
            "n_params": float(n_arr[i]),
            "tokens": float(d_arr[i]),
            "loss": float(l_arr[i]),
            "tokens_per_param": float(d_arr[i] / n_arr[i]),
        }
        for label, i in sorted(best.items())
    ]


# ---- input checks ----------------------------------------------------------------------------------------------


def _check_runs(columns: dict, min_runs: int, why: str = "one per free parameter"):
    arrays = {name: _check_column(name, values) for name, values in columns.items()}
    lengths = {name: len(arr) for name, arr in arrays.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"expected one value per run in every column, got lengths {lengths}")
    runs = next(iter(lengths.values()))
    if runs < min_runs:
        raise ValueError(f"expected at least {min_runs} runs ({why}), got {runs}")
    return tuple(arrays.values())


def _check_column(name: str, values):
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"expected {name} as a list of numbers, got {type(values).__name__}: {err}") from None
    if arr.ndim != 1:
        raise ValueError(f"expected {name} as a flat list of numbers, got shape {arr.shape}")
    bad = ~(np.isfinite(arr) & (arr > 0))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"expected {name} positive and finite, got {float(arr[i])!r} at index {i}")
    return arr


def _check_bootstrap(bootstrap) -> None:
    if not isinstance(bootstrap, (int, np.integer)) or isinstance(bootstrap, bool) or bootstrap < MIN_BOOTSTRAP:
        raise ValueError(
            f"expected bootstrap an int >= {MIN_BOOTSTRAP} (resamples for a 95% interval), got {bootstrap!r}"
        )

"""lessons/scale/scaling_law.py (issue 24, item 1): Chinchilla's L(N, D) = E + A/N^alpha + B/D^beta, fitted and judged.

Proved against what we did not write: losses made from known parameters (Hoffmann et al. 2022's own fit,
E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28), their published compute-optimal exponents, a brute-force
minimisation, torch.optim.LBFGS run on each fit alone, and the Rosenbrock function's known minimum. Every
"shown" has its null: the effect absent by construction must come back not shown.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnlab.lessons.scale import scaling_law as sl
from attnlab.lessons.scale.scaling_law import LawFit, compute_optimal, fit_law, fit_power, isoflop_minima

CHINCHILLA = {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28}  # Hoffmann et al. 2022, approach 3
SIZES = np.geomspace(1e4, 3e6, 6)  # parameters: the sweep, 10k to a few million
BUDGETS = np.geomspace(1e6, 1e9, 4)  # tokens


def grid_runs(sizes=SIZES, budgets=BUDGETS):
    n, d = np.meshgrid(sizes, budgets)
    return n.ravel(), d.ravel()


def chinchilla(n, d, E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28):
    return E + A / n**alpha + B / d**beta


def noisy(loss, sigma, seed):
    return loss * np.exp(np.random.default_rng(seed).normal(0.0, sigma, np.shape(loss)))  # multiplicative noise


@pytest.fixture(scope="module")
def noisy_fit():
    n, d = grid_runs()
    return fit_law(n, d, noisy(chinchilla(n, d), 0.01, seed=1))


def test_exact_losses_give_back_every_parameter():
    n, d = grid_runs()
    fit = fit_law(n, d, chinchilla(n, d))
    for name, true in CHINCHILLA.items():
        assert getattr(fit, name) == pytest.approx(true, rel=1e-4), name
    assert fit.rms_log_residual < 1e-6
    assert fit.alpha_interval == [pytest.approx(0.34, abs=1e-4)] * 2  # exact losses: every resample agrees
    assert (fit.shown, fit.reason) == (True, "shown")


def test_noisy_losses_intervals_cover_the_truth_and_the_law_is_shown(noisy_fit):
    fit = noisy_fit
    assert fit.alpha_interval[0] < CHINCHILLA["alpha"] < fit.alpha_interval[1]
    assert fit.beta_interval[0] < CHINCHILLA["beta"] < fit.beta_interval[1]
    assert fit.E_interval[0] < fit.E < fit.E_interval[1]
    assert fit.alpha_interval[1] - fit.alpha_interval[0] < 0.1  # an interval, not "anything"
    assert 0.005 < fit.rms_log_residual < 0.015  # the 1% noise put in, seen again
    assert (fit.n_runs, fit.n_sizes, fit.n_budgets) == (24, 6, 4)
    assert fit.n_range == [1e4, pytest.approx(3e6)] and fit.d_range == [pytest.approx(1e6), pytest.approx(1e9)]
    assert (fit.shown, fit.reason) == (True, "shown")
    json.dumps(dataclasses.asdict(fit), allow_nan=False)  # plain numbers, ready for scale.json


def test_the_bootstrap_is_seeded():
    x = np.geomspace(1e4, 3e6, 6)
    loss = noisy(1.8 + 50.0 / x**0.3, 0.01, seed=3)
    one, same, other = (fit_power(x, loss, bootstrap=40, seed=s) for s in (5, 5, 6))
    assert one == same and one.alpha_interval != other.alpha_interval


@pytest.mark.parametrize(
    "absent,reasons",
    [
        ("size", {"alpha-interval-includes-zero", "size-effect-not-resolved"}),
        ("data", {"beta-interval-includes-zero", "data-effect-not-resolved"}),
    ],
)
def test_a_term_absent_by_construction_is_not_shown(absent, reasons):
    n, d = grid_runs()
    loss = chinchilla(n, d, A=0.0) if absent == "size" else chinchilla(n, d, B=0.0)  # alpha (or beta) = 0
    fit = fit_law(n, d, noisy(loss, 0.01, seed=2), bootstrap=100)
    assert fit.rms_log_residual < sl.MAX_RMS_LOG_RESIDUAL  # a good fit: only the missing term can refuse it
    assert not fit.shown and fit.reason in reasons


def test_three_sizes_are_too_few_even_for_a_perfect_law():
    n, d = grid_runs(SIZES[:3])
    fit = fit_law(n, d, chinchilla(n, d), bootstrap=40)
    assert fit.rms_log_residual < 1e-6 and fit.n_sizes == 3
    assert (fit.shown, fit.reason) == (False, "too-few-sizes")


def test_one_token_budget_is_too_few_even_for_a_perfect_law():
    n, d = grid_runs(budgets=BUDGETS[1:2])
    fit = fit_law(n, d, chinchilla(n, d), bootstrap=40)
    assert fit.rms_log_residual < 1e-6 and fit.n_budgets == 1
    assert (fit.shown, fit.reason) == (False, "too-few-budgets")


def test_pure_noise_is_not_a_law():
    n, d = grid_runs()
    quiet = fit_law(n, d, noisy(np.full(n.shape, 3.0), 0.02, seed=4), bootstrap=100)
    assert quiet.rms_log_residual < sl.MAX_RMS_LOG_RESIDUAL  # noise small enough that only the intervals refuse
    assert not quiet.shown and quiet.reason in {
        "alpha-interval-includes-zero",
        "beta-interval-includes-zero",
        "size-effect-not-resolved",
        "data-effect-not-resolved",
    }
    json.dumps(dataclasses.asdict(quiet), allow_nan=False)  # a fit with no minimum still gives finite numbers
    assert abs(quiet.alpha) <= sl.EXPONENT_BOUND + 0.01 and abs(math.log(quiet.B)) <= sl.LOG_BOUND + 0.01
    loud = fit_law(n, d, noisy(np.full(n.shape, 3.0), 0.3, seed=4), bootstrap=40)
    assert (loud.shown, loud.reason) == (False, "poor-fit")


def test_compute_optimal_is_the_brute_force_minimum(noisy_fit):
    fit = noisy_fit
    for c in (1e15, 1e18, 1e21):
        n = np.geomspace(1e2, 1e14, 400_001)  # a log grid 3e-5 decades fine
        d = c / (6 * n)
        loss = fit.E + fit.A / n**fit.alpha + fit.B / d**fit.beta
        i = int(np.argmin(loss))
        opt = compute_optimal(fit, c)
        assert opt.n_params == pytest.approx(n[i], rel=2e-4) and opt.tokens == pytest.approx(d[i], rel=2e-4)
        assert opt.loss == pytest.approx(loss[i], rel=1e-9) and opt.loss <= loss[i]
        assert 6 * opt.n_params * opt.tokens == pytest.approx(c)
        assert opt.tokens_per_param == pytest.approx(opt.tokens / opt.n_params)
        assert opt.tokens_per_param == pytest.approx(c / 6 / opt.n_params**2)


def test_chinchillas_own_fit_gives_its_published_exponents():
    # Hoffmann et al. Table 2, approach 3: N_opt ~ C^0.46, D_opt ~ C^0.54
    fit = LawFit(
        **CHINCHILLA,
        alpha_interval=[],
        beta_interval=[],
        E_interval=[],
        size_effect_interval=[],
        data_effect_interval=[],
        n_runs=0,
        n_sizes=0,
        n_budgets=0,
        n_range=[],
        d_range=[],
        rms_log_residual=0.0,
        bootstrap=0,
        shown=False,
        reason="",
    )
    low, high = compute_optimal(fit, [1e20, 1e22])
    assert math.log10(high.n_params / low.n_params) / 2 == pytest.approx(0.46, abs=0.01)
    assert math.log10(high.tokens / low.tokens) / 2 == pytest.approx(0.54, abs=0.01)
    assert compute_optimal(fit, 1e20) == low  # a number gives one Optimum, a list a list


def test_isoflop_minima_pick_the_lowest_loss_per_budget():
    n = [1e4, 3e4, 1e5, 1e4, 3e4, 1e5, 3e5]
    d = [1e7, 3e6, 1e6, 1e8, 3e7, 1e7, 3e6]
    labels = [6e11, 6e11, 6e11, 6e12, 6e12, 6e12, 6e12]
    loss = [3.0, 2.8, 2.9, 2.7, 2.5, 2.55, 2.6]
    order = [6, 2, 0, 4, 1, 5, 3]  # shuffled: the answer must not depend on the order of the runs
    got = isoflop_minima(*([col[i] for i in order] for col in (n, d, labels, loss)))
    assert got == [
        {"budget": 6e11, "n_params": 3e4, "tokens": 3e6, "loss": 2.8, "tokens_per_param": pytest.approx(100.0)},
        {"budget": 6e12, "n_params": 3e4, "tokens": 3e7, "loss": 2.5, "tokens_per_param": pytest.approx(1000.0)},
    ]


def test_fit_power_recovers_a_known_law_and_refuses_a_flat_one():
    x = np.geomspace(1e4, 3e6, 8)
    law = 1.8 + 50.0 / x**0.3
    exact = fit_power(x, law, bootstrap=40)
    assert (exact.E, exact.A, exact.alpha) == (
        pytest.approx(1.8, rel=1e-4),
        pytest.approx(50.0, rel=1e-4),
        pytest.approx(0.3, rel=1e-4),
    )
    fit = fit_power(x, noisy(law, 0.005, seed=7))
    assert fit.alpha_interval[0] < 0.3 < fit.alpha_interval[1] and (fit.shown, fit.reason) == (True, "shown")
    flat = fit_power(x, noisy(np.full(8, 2.5), 0.01, seed=7), bootstrap=100)
    assert not flat.shown and flat.reason in {"alpha-interval-includes-zero", "effect-not-resolved"}
    few = fit_power(x[:3], law[:3], bootstrap=40)
    assert (few.shown, few.reason) == (False, "too-few-points")


def huber_by_torch(theta, log_n, log_d, log_loss, weights):
    """The objective written independently: torch's logsumexp and huber_loss, in the module's units of delta^2."""
    a, b, e, alpha, beta = theta.unbind(-1)  # each (S,)
    terms = torch.stack(
        torch.broadcast_tensors(a[:, None] - alpha[:, None] * log_n, b[:, None] - beta[:, None] * log_d, e[:, None]), -1
    )  # (S, R, 3)
    log_pred = torch.logsumexp(terms, -1)  # (S, R)
    huber = F.huber_loss(log_pred, log_loss.expand_as(log_pred), delta=sl.HUBER_DELTA, reduction="none")
    return (weights * huber).sum(-1) / sl.HUBER_DELTA**2  # (S,)


def law_problem(seed=1):
    n, d = grid_runs()
    log_n, log_d, log_loss = (torch.from_numpy(np.log(v)) for v in (n, d, noisy(chinchilla(n, d), 0.01, seed=seed)))
    weights = torch.from_numpy(np.random.default_rng(0).integers(0, 3, size=(3, n.size))).double()  # (3, R)
    return log_n, log_d, log_loss, weights


def test_the_closed_form_gradient_is_autograds(one_thread):
    log_n, log_d, log_loss, weights = law_problem()
    theta = torch.tensor(
        [[6.0, 6.0, 0.5, 0.34, 0.28], [3.0, 9.0, -1.0, 0.1, 0.6], [6.007, 6.018, 0.525, 0.34, 0.28]],
        dtype=torch.float64,
        requires_grad=True,
    )  # (3, 5): far, farther, and at the optimum
    f, g = sl._objective(theta.detach().numpy(), torch.stack([log_n, log_d]).numpy(), log_loss.numpy(), weights.numpy())
    f_torch = huber_by_torch(theta, log_n, log_d, log_loss, weights)
    (g_torch,) = torch.autograd.grad(f_torch.sum(), theta)
    np.testing.assert_allclose(f, f_torch.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(g, g_torch.numpy(), rtol=1e-9, atol=1e-9)


def test_the_wall_beyond_the_bounds_adds_its_square_and_its_slope():
    log_n, log_d, log_loss, weights = law_problem()
    log_x, w = torch.stack([log_n, log_d]).numpy(), weights[:1].numpy()
    inside = np.array([[6.0, 6.0, 0.5, 0.34, 0.28]])
    beyond = inside + np.array([[0.0, -sl.LOG_BOUND - 6.0 - 0.1, 0.0, sl.EXPONENT_BOUND - 0.34 + 0.2, 0.0]])
    f_inside = sl._objective(inside, log_x, log_loss.numpy(), w)[0]
    f_plain = huber_by_torch(torch.from_numpy(beyond), log_n, log_d, log_loss, weights[:1]).numpy()
    f, g = sl._objective(beyond, log_x, log_loss.numpy(), w)
    assert f_inside == pytest.approx(
        huber_by_torch(torch.from_numpy(inside), log_n, log_d, log_loss, weights[:1]).item()
    )
    assert f[0] == pytest.approx(f_plain[0] + sl._WALL * (0.1**2 + 0.2**2), rel=1e-9)
    step = 1e-6  # central differences, against the closed-form gradient there
    numeric = [
        (
            sl._objective(beyond + step * e, log_x, log_loss.numpy(), w)[0]
            - sl._objective(beyond - step * e, log_x, log_loss.numpy(), w)[0]
        )[0]
        / (2 * step)
        for e in np.eye(5)
    ]
    np.testing.assert_allclose(g[0], numeric, rtol=1e-5, atol=1e-3)


def test_the_batched_lbfgs_matches_torch_lbfgs_on_each_fit_alone(one_thread):
    log_n, log_d, log_loss, weights = law_problem()
    weights = weights[:2]  # two resamples: torch.optim.LBFGS alone is slow
    start = np.array([[6.0, 6.0, 0.5, 0.3, 0.3]] * 2)  # (2, 5)
    log_x = torch.stack([log_n, log_d]).numpy()
    batched = sl._lbfgs(start, lambda t: sl._objective(t, log_x, log_loss.numpy(), weights.numpy()), 1000)
    for row in range(2):
        theta = torch.tensor(start[row : row + 1], requires_grad=True)
        opt = torch.optim.LBFGS(
            [theta], max_iter=1000, tolerance_grad=1e-9, tolerance_change=1e-15, line_search_fn="strong_wolfe"
        )

        def closure():
            opt.zero_grad()
            obj = huber_by_torch(theta, log_n, log_d, log_loss, weights[row : row + 1]).sum()
            obj.backward()
            return obj

        opt.step(closure)
        np.testing.assert_allclose(batched[row], theta.detach().numpy()[0], rtol=1e-5, atol=1e-6)


def test_the_batched_lbfgs_finds_rosenbrocks_minimum_from_each_start():
    def rosenbrock(t):  # minimum 0 at (1, 1); the value per row and its gradient
        x, y = t[:, 0], t[:, 1]
        f = 100 * (y - x**2) ** 2 + (1 - x) ** 2
        return f, np.stack([-400 * x * (y - x**2) - 2 * (1 - x), 200 * (y - x**2)], 1)

    found = sl._lbfgs(np.array([[-1.2, 1.0], [0.0, 0.0], [2.0, -1.0], [1.0, 1.0]]), rosenbrock, 1000)
    np.testing.assert_allclose(found, np.ones((4, 2)), atol=1e-6)


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: fit_law([1e4, 2e4], [1e6], [3.0, 2.9]), "one value per run"),
        (
            lambda: fit_law([1e4, -2e4, 3e4, 4e4, 5e4], [1e6] * 5, [3.0] * 5),
            r"n_params positive and finite, got -20000",
        ),
        (
            lambda: fit_law([1e4] * 5, [1e6] * 5, [3.0, 2.0, float("nan"), 1.0, 1.0]),
            "losses positive and finite, got nan at index 2",
        ),
        (lambda: fit_law([1e4] * 5, [1e6, 1e6, math.inf, 1e6, 1e6], [3.0] * 5), "tokens positive and finite, got inf"),
        (lambda: fit_law(["big"] * 5, [1e6] * 5, [3.0] * 5), "n_params as a list of numbers"),
        (lambda: fit_law([[1e4]] * 5, [1e6] * 5, [3.0] * 5), r"flat list of numbers, got shape \(5, 1\)"),
        (lambda: fit_law([1e4] * 4, [1e6] * 4, [3.0] * 4), "at least 5 runs"),
        (lambda: fit_law([1e4] * 5, [1e6] * 5, [3.0] * 5, bootstrap=10), "bootstrap an int >= 40"),
        (lambda: fit_power([1e4, 2e4], [3.0, 2.0]), "at least 3 runs"),
        (lambda: isoflop_minima([1e4], [1e6], [6e10, 6e11], [3.0]), "one flops_budget_label per run"),
        (lambda: isoflop_minima([], [], [], []), "at least 1 runs"),
    ],
)
def test_bad_input_says_what_was_expected_and_what_came(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_compute_optimal_refuses_a_law_without_a_minimum(noisy_fit):
    with pytest.raises(ValueError, match="alpha, beta, A, B > 0"):
        compute_optimal(dataclasses.replace(noisy_fit, alpha=-0.1), 1e18)
    with pytest.raises(ValueError, match="flops positive and finite, got 0"):
        compute_optimal(noisy_fit, [1e18, 0.0])

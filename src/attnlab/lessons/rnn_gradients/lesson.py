"""Gradients through time: a tanh RNN's ||d h_t / d h_k|| against the bound lambda^(t-k), and an LSTM's cell path.

d h_t / d h_k = prod_{i=k+1..t} diag(tanh'(z_i)) W_h, and tanh' <= 1, so its spectral norm is at most
||W_h||^(t-k) = lambda^(t-k) with lambda the largest singular value of W_h. The lesson sets lambda, runs
the RNN, takes every d h_T / d h_k with autograd and compares. The LSTM's direct cell path
c_{t-1} -> c_t has derivative diag(f_t) (gates held fixed), so over t-k steps it is the product of the
forget gates: no W in it, and near 1 when the gates are open.

Explosion: without the tanh (a linear RNN, h_t = W_h h_{t-1} + W_x x_t) every factor is W_h itself, and with
W_h = lambda * orthogonal, d h_T / d h_k = W_h^(T-k) has spectral norm exactly lambda^(T-k): the bound is reached,
and above lambda = 1 the gradient grows without limit. With tanh, saturated units (tanh' < 1) pull it below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead, within
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, check, lesson
from attnlab.lessons.common.result import Shown

PARAMS = (
    Param("lam", "float", 0.9, 0.1, 2.0, step=0.05, help="largest singular value lambda of W_h"),
    Param("steps", "int", 40, 2, 100, step=1, help="time steps T"),
    Param("hidden", "int", 32, 2, 64, step=1, help="hidden size"),
    Param("forget_bias", "float", 3.0, -4.0, 6.0, step=0.5, help="LSTM forget-gate bias (larger: gates nearer 1)"),
    Param("input_scale", "float", 0.3, 0.0, 3.0, step=0.1, help="size of the random inputs x_t"),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="random seed"),
)
QUICK = {"steps": 12, "hidden": 8}
COURSE = ("lecture06", 20)  # the course map's section (web/course_map.py) and place in it

LAMBDAS = (0.5, 0.9, 1.0, 1.1)  # the course's four cases, always computed for the figure
FADED = 0.1  # "vanished": T steps apart the gradient is at most a tenth of the same tanh RNN's at lambda = 1
KEPT = 1.0  # "the LSTM keeps it": its cell path leads the RNN's gradient by one decade (a factor of 10)
HALVED = 0.5  # "saturation pulls it down": the tanh RNN's gradient at most half the linear one's
VANISH_CASE = 0.9  # the course's lambda < 1 case that the vanishing claims read when your lambda is 1 or more
TINY = 1e-300  # log10 of a gradient that underflowed to 0
# Each claim's strongest null (lessons/common/nulls.py). Vanishing: the same tanh RNN at lambda = 1 (same inputs, the
# same directions of W_h), computed in every run: tanh' < 1 fades the gradient there too, so lambda < 1 must fade it
# ten times more. The LSTM: forget_bias = 0, its gates about half open, where the cell path has nothing to keep it.
# Saturation: no inputs, where every unit stays at 0, in tanh's linear range.
NULLS = {
    "vanishes": Null("lam_1"),
    "lstm_keeps": Null("forget_0", forget_bias=0.0),
    "saturation": Null("no_inputs", input_scale=0.0),
}


@dataclass
class RNNCurve:
    lam: float
    distance: list[int]  # t - k = 1 .. T
    measured: list[float]  # ||d h_T / d h_k||_2 by autograd
    bound: list[float]  # lam^(t-k)
    max_ratio: float  # max of measured / bound: at most 1
    mean_slope: float = 1.0  # mean tanh'(z_t) = 1 - h_t^2 over steps and units: 1 means the linear range


@dataclass
class LSTMCurve:
    distance: list[int]
    direct_mean: list[float]  # mean over units of prod f_i: the direct cell path, per unit
    direct_max: list[float]  # its spectral norm (the largest unit)
    full: list[float]  # ||d c_T / d c_k||_2 with every path (gates not held fixed), by autograd
    mean_forget: float  # mean forget gate value
    direct_check: float  # max |autograd with gates held fixed - diag(prod f)|
    full_per_step: float  # (full at t-k = T / full at t-k = 1)^(1/(T-1)): the all-paths norm's factor per step


@dataclass
class LinearCurve:
    """The same W_h without the tanh: h_t = W_h h_{t-1} + W_x x_t."""

    lam: float
    measured: list[float]  # ||d h_T / d h_k||_2 by autograd, distance 1 .. T
    max_rel_error: float  # max over distances of |measured / lam^(t-k) - 1|: 0 up to rounding
    tanh_over_linear: float  # the tanh RNN's ||d h_T / d h_0|| / lam^T: how much saturation took off


@dataclass
class RNNGradientsResult(Shown):
    topic: str
    params: dict
    chosen: RNNCurve
    curves: list[RNNCurve]  # lam in 0.5, 0.9, 1.0, 1.1
    lstm: LSTMCurve
    linear: LinearCurve  # the chosen lambda without tanh: lambda^(t-k) reached exactly (explodes above 1)
    claims: list[Claim]


def scaled_matrix(n: int, lam: float, g: torch.Generator) -> torch.Tensor:
    """lam times a random orthogonal n x n matrix: every singular value is lam, so the largest one is lam and
    the bound lam^(t-k) is as tight as tanh' allows (a Gaussian matrix's smaller singular values would hide it)."""
    Q, R = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))
    return lam * Q * torch.sign(torch.diagonal(R))  # sign fix: Q uniformly distributed over orthogonal matrices


def jacobians_to_last(states: list[torch.Tensor]) -> list[torch.Tensor]:
    """[d s_T / d s_k for k = 0 .. T-1], each (d, d), by autograd: one batched backward pass seeded with
    the identity, row i of every J_k being d s_T[i] / d s_k."""
    last, earlier = states[-1], states[:-1]  # (1, d) each
    d = last.shape[-1]
    eye = torch.eye(d, dtype=last.dtype)[:, None, :]  # (d, 1, d): one unit vector per backward pass
    grads = torch.autograd.grad(last, earlier, grad_outputs=eye, retain_graph=True, is_grads_batched=True)
    return [g[:, 0, :] for g in grads]  # (d, 1, d) -> (d, d)


def spectral_norms(Js: list[torch.Tensor]) -> list[float]:
    """||J||_2 of each J. Each is scaled by its largest entry first: these gradients reach 1e-100 and below,
    and an SVD on numbers that small (subnormal floats) is both slow and inaccurate."""
    J = torch.stack(Js)  # (K, d, d)
    scale = J.abs().amax(dim=(-2, -1))  # (K,)
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    J = J / safe[:, None, None]
    top = torch.linalg.eigvalsh(J.mT @ J)[:, -1].clamp_min(0)  # largest eigenvalue of J^T J = ||J||_2^2
    return (top.sqrt() * scale).tolist()


def make_rnn(lam: float, d_in: int, hidden: int, seed: int):
    from attnlab.nn.recurrent import RNN

    g = torch.Generator().manual_seed(seed)
    rnn = RNN(d_in, hidden).double()
    with torch.no_grad():
        rnn.W_h.copy_(scaled_matrix(hidden, lam, g))
        rnn.W_x.copy_(torch.randn(hidden, d_in, generator=g, dtype=torch.float64) / d_in**0.5)
    return rnn


def rnn_curve(lam: float, xs: torch.Tensor, hidden: int, seed: int) -> RNNCurve:
    rnn = make_rnn(lam, xs.shape[-1], hidden, seed)
    h0 = torch.zeros(1, hidden, dtype=torch.float64, requires_grad=True)  # so d h_T / d h_0 exists too
    _, states = rnn(xs, h0)
    T = len(states) - 1
    norms = spectral_norms(jacobians_to_last(states))  # k = 0 .. T-1
    distance = [T - k for k in range(T)][::-1]  # 1 .. T
    measured = norms[::-1]
    bound = [lam**dist for dist in distance]
    slope = (1 - torch.stack(states[1:]).detach() ** 2).mean().item()  # tanh'(z_t) = 1 - tanh(z_t)^2
    return RNNCurve(lam, distance, measured, bound, max(m / b for m, b in zip(measured, bound)), slope)


def linear_curve(chosen: RNNCurve, xs: torch.Tensor, hidden: int, seed: int) -> LinearCurve:
    """The chosen RNN's own W_h and W_x with the tanh taken out: every Jacobian factor is W_h = lam * Q."""
    rnn = make_rnn(chosen.lam, xs.shape[-1], hidden, seed)
    h = torch.zeros(1, hidden, dtype=torch.float64, requires_grad=True)
    states = [h]
    for step in range(xs.shape[1]):
        h = h @ rnn.W_h.T + xs[:, step] @ rnn.W_x.T + rnn.b  # (1, hidden): no activation
        states.append(h)
    measured = spectral_norms(jacobians_to_last(states))[::-1]  # distance 1 .. T
    err = max(abs(m / b - 1) for m, b in zip(measured, chosen.bound))
    return LinearCurve(chosen.lam, measured, err, chosen.measured[-1] / chosen.bound[-1])


def lstm_curve(xs: torch.Tensor, hidden: int, forget_bias: float, seed: int) -> LSTMCurve:
    from attnlab.nn.recurrent import LSTM

    lstm = LSTM(xs.shape[-1], hidden, forget_bias=forget_bias).double()
    g = torch.Generator().manual_seed(seed)  # not the global generator, which other threads of the web app share
    bound = 1 / hidden**0.5
    with torch.no_grad():
        for _name, p in lstm.named_parameters():  # W_f, b_f, W_i, ...: uniform(±1/sqrt(d)) as LSTM draws them
            p.copy_(torch.rand(p.shape, generator=g, dtype=torch.float64) * 2 * bound - bound)
        lstm.b_f += forget_bias

    zeros = lambda: torch.zeros(1, hidden, dtype=torch.float64, requires_grad=True)  # noqa: E731
    _, tr = lstm(xs, (zeros(), zeros()))
    T = len(tr["f"])
    f = torch.stack(tr["f"])[:, 0].detach()  # (T, d): f_1 .. f_T
    direct = [f[k:].prod(0) for k in range(T)]  # d c_T / d c_k along the cell path = prod_{i=k+1..T} f_i
    full = spectral_norms(jacobians_to_last(tr["c"]))
    _, held = lstm(xs, (zeros(), zeros()), detach_gates=True)
    held_J = jacobians_to_last(held["c"])
    check_err = max((J - torch.diag(p)).abs().max().item() for J, p in zip(held_J, direct))
    distance = [T - k for k in range(T)][::-1]
    return LSTMCurve(
        distance,
        [p.mean().item() for p in direct][::-1],
        [p.max().item() for p in direct][::-1],
        full[::-1],
        f.mean().item(),
        check_err,
        per_step(full[::-1]),
    )


def per_step(norms: list[float]) -> float:
    """The geometric mean factor by which a norm changes a step, from its first value to its last (0 when it
    reaches 0: a product of gates that underflows)."""
    if len(norms) < 2 or norms[0] <= 0:
        return 1.0 if len(norms) < 2 else 0.0
    return (norms[-1] / norms[0]) ** (1 / (len(norms) - 1)) if norms[-1] > 0 else 0.0


@lesson
def rnn_gradients(
    lam: float = 0.9,
    steps: int = 40,
    hidden: int = 32,
    forget_bias: float = 3.0,
    input_scale: float = 0.3,
    seed: int = 0,
    *,
    lang: str = "zh",
) -> RNNGradientsResult:
    """Measured ||d h_t / d h_k|| for a tanh RNN against lambda^(t-k), and the LSTM's forget-gate product."""
    p = check(
        PARAMS, dict(lam=lam, steps=steps, hidden=hidden, forget_bias=forget_bias, input_scale=input_scale, seed=seed)
    )
    g = torch.Generator().manual_seed(p["seed"])
    d_in = 8
    xs = torch.randn(1, p["steps"], d_in, generator=g, dtype=torch.float64) * p["input_scale"]  # (1, T, d_in)
    curves = [rnn_curve(lam_i, xs, p["hidden"], p["seed"]) for lam_i in LAMBDAS]
    chosen = next((c for c in curves if c.lam == p["lam"]), None) or rnn_curve(p["lam"], xs, p["hidden"], p["seed"])
    lstm = lstm_curve(xs, p["hidden"], p["forget_bias"], p["seed"])
    T = p["steps"]
    linear = linear_curve(chosen, xs, p["hidden"], p["seed"])
    regime = "explode" if chosen.lam > 1 else ("vanish" if chosen.lam < 1 else "flat")
    over = sum(m > b * (1 + 1e-9) for m, b in zip(chosen.measured, chosen.bound))  # distances over the bound
    # The course says the gradient vanishes below lambda = 1. At your lambda when it is below 1; at lambda >= 1 (where
    # the course says no such thing) the claim is read on the course's own case lambda = 0.9, always computed.
    fading = chosen if chosen.lam < 1 else next(c for c in curves if c.lam == VANISH_CASE)
    rnn_T, lstm_T = fading.measured[-1], lstm.direct_mean[-1]
    flat_T = next(c for c in curves if c.lam == 1.0).measured[-1]  # the same tanh RNN at lambda = 1
    faded = rnn_T / flat_T if flat_T > 0 else 1.0  # how much more lambda < 1 fades it than lambda = 1 does
    log_rnn, log_lstm = math.log10(max(rnn_T, TINY)), math.log10(max(lstm_T, TINY))
    # the fewest steps at which lam^T, what lambda < 1 takes off over lambda = 1 in the linear case, is under FADED
    sure = math.ceil(math.log(FADED) / math.log(fading.lam))

    def ctl(name: str) -> str:
        return t(f"explain.rnn_gradients.control.{name}", lang)

    claims = [
        within(
            "rnn_bound",
            t(
                "explain.rnn_gradients.claim.bound",
                lang,
                lam=chosen.lam,
                T=T,
                ratio=chosen.max_ratio,
                m=chosen.measured[-1],
                b=chosen.bound[-1],
            ),
            lang,
            measured=over,
            expected=0,
            tol=0,
            control=ctl("bound"),
            values={
                "max_ratio": chosen.max_ratio,
                "distances_over": over,
                "measured_T": chosen.measured[-1],
                "bound_T": chosen.bound[-1],
            },
        ),
        # The course: below lambda = 1 the gradient vanishes over time steps. Against the same tanh RNN at lambda = 1
        # (whose tanh' < 1 fades it too), T steps apart it must be 10 times smaller.
        lead(
            "vanishes",
            t(
                "explain.rnn_gradients.claim.vanishes",
                lang,
                lam=fading.lam,
                T=T,
                m=rnn_T,
                m1=fading.measured[0],
                flat=flat_T,
                ratio=faded,
                kept=FADED,
            )
            + (
                ""
                if fading is chosen
                else t("explain.rnn_gradients.claim.vanish_case", lang, lam=chosen.lam, case=fading.lam)
            ),
            lang,
            measured=faded,
            baseline=1.0,
            margin=1.0 - FADED,
            lower=True,
            control=ctl("lam_1"),
            values={
                "lam": fading.lam,
                "steps": T,
                "measured_T": rnn_T,
                "measured_1": fading.measured[0],
                "lam_1_T": flat_T,
                "ratio": faded,
                "sure_from": sure,
            },
            hint=t("explain.rnn_gradients.hint.vanishes", lang, lam=fading.lam, T=sure),
        ),
        # The LSTM's answer: its direct cell path (the product of forget gates) against that RNN's gradient, in decades.
        lead(
            "lstm_keeps",
            t(
                "explain.rnn_gradients.claim.lstm_keeps",
                lang,
                T=T,
                lstm=lstm_T,
                rnn=rnn_T,
                lam=fading.lam,
                f=lstm.mean_forget,
                fb=p["forget_bias"],
            ),
            lang,
            measured=log_lstm,
            baseline=log_rnn,
            margin=KEPT,
            control=ctl("rnn"),
            values={
                "lstm_T": lstm_T,
                "rnn_T": rnn_T,
                "lam": fading.lam,
                "log10_lstm_T": log_lstm,
                "log10_rnn_T": log_rnn,
                "mean_forget": lstm.mean_forget,
            },
            hint=t("explain.rnn_gradients.hint.lstm_keeps", lang),
        ),
        within(
            "lstm_direct",
            t("explain.rnn_gradients.claim.direct", lang, err=lstm.direct_check),
            lang,
            measured=lstm.direct_check,
            expected=0.0,
            tol=1e-12,
            control=ctl("autograd"),
            values={"diff": lstm.direct_check},
        ),
        within(
            "linear_exact",
            t(
                f"explain.rnn_gradients.claim.linear_{regime}",
                lang,
                lam=chosen.lam,
                T=T,
                m=linear.measured[-1],
                b=chosen.bound[-1],
                err=linear.max_rel_error,
            ),
            lang,
            measured=linear.max_rel_error,
            expected=0.0,
            tol=1e-9,
            control=ctl("power"),
            values={"max_rel_error": linear.max_rel_error, "linear_T": linear.measured[-1], "lam_T": chosen.bound[-1]},
        ),
        lead(
            "saturation",
            t(
                "explain.rnn_gradients.claim.saturation",
                lang,
                lam=chosen.lam,
                T=T,
                tanh=chosen.measured[-1],
                lin=linear.measured[-1],
                ratio=linear.tanh_over_linear,
                slope=chosen.mean_slope,
            ),
            lang,
            measured=linear.tanh_over_linear,
            baseline=1.0,
            margin=1.0 - HALVED,
            lower=True,
            control=ctl("linear"),
            values={
                "tanh_T": chosen.measured[-1],
                "linear_T": linear.measured[-1],
                "ratio": linear.tanh_over_linear,
                "mean_tanh_slope": chosen.mean_slope,
            },
            hint=t("explain.rnn_gradients.hint.saturation", lang),
        ),
    ]
    return RNNGradientsResult("rnn-gradients", p, chosen, curves, lstm, linear, claims)

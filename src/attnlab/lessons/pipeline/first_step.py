"""Step ⑤ of the pipeline, the first update, checked: the text's rule against what training really does.

The course text (chapter 16 ⑤): the loss is −log p(光) (−log 0.12 ≈ 2.1), and one update
θ ← θ − lr · ∇(−log p(光)) makes p(光) "a little larger". That holds for a small enough lr: to first order
−log p changes by −lr · ‖g‖² < 0. The lab's training is not that rule: AdamW lowers the loss averaged over
every position of the line, and its first step moves every number by about lr · sign(g), however small its
gradient (Adam divides the step by √v̂ = |g|). So one target's probability can drop. Both are measured here on
copies of the same untrained model; the run itself is left untouched.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import math
from dataclasses import dataclass

import torch

from attnlab.i18n import t
from attnlab.io.threads import threads_for
from attnlab.lessons.common.claims import Claim, beats_chance, lead, within
from attnlab.lessons.common.params import seeded
from attnlab.lessons.common.result import Shown
from attnlab.train.data import get_batch
from attnlab.train.loop import Trainer, lm_loss

MAX_HALVINGS = 40  # backtracking: the step size is halved at most this often
NEAR_LR = 0.99  # a number "moved by about lr" if its Adam step is at least this fraction of lr
BIG_GRAD = 1e-6  # |g| / (|g| + ε) >= 0.99 from here on (ε = 1e-8, Adam's default)
DEFAULT_SEEDS = 10  # the AdamW step is counted over seeds 0 .. DEFAULT_SEEDS - 1 ...
COUNT_LIMIT = 250_000  # ... for models up to this many parameters (larger ones take seconds per seed)
FIRST_ORDER = 0.5  # the plain step's −log p must fall by at least half its first-order estimate lr·‖g‖² ...
ROUNDING = 1e-12  # ... and by more than float64 rounding could move it (lr = 0 moves nothing)
RISE = 0.01  # an AdamW step "moves" p(target) or the line's loss when it changes it by 1% of its value
RANDOM_DIRECTION = 0.5  # a step in a random direction raises p(target) about half the time (to first order)


@dataclass
class NegLog:
    """The text's arithmetic: the loss of a probability, −log p (natural log)."""

    p: float
    neg_log: float


def neg_log(p: float) -> NegLog:
    """−ln p for p in (0, 1]; ValueError otherwise (a probability of 0 has no finite loss)."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) or not 0 < p <= 1:
        raise ValueError(f"p must be a probability in (0, 1], got {p!r}")
    return NegLog(p=float(p), neg_log=-math.log(p))


@dataclass
class PlainStep:
    """θ ← θ − lr · ∇(−log p(target)) on the position that predicts the target, nothing else."""

    lr: float  # the step size used
    lr_start: float  # tried first: the run's own first learning rate
    halvings: int  # how often lr_start was halved before p rose (backtracking)
    grad_sq: float  # ‖∇(−log p)‖², over every parameter
    predicted_drop: float  # lr · ‖g‖²: the first-order fall of −log p
    p_before: float
    p_after: float
    loss_before: float  # −log p
    loss_after: float


@dataclass
class AdamStep:
    """One step of the real training loop (attnlab.train.Trainer): AdamW on the loss over every position."""

    lr: float
    positions: int  # next-token predictions the loss averages over
    p_before: float
    p_after: float
    line_loss_before: float  # the batch's mean cross-entropy, before and after the step
    line_loss_after: float
    numbers: int  # parameters (numbers) in the model
    moved: int  # numbers with a nonzero gradient, which Adam's step moves
    large: int  # of those, the ones with |g| >= BIG_GRAD (for them ε = 1e-8 no longer matters)
    near_lr: int  # of the large ones, how many Adam moved by at least NEAR_LR · lr
    over_lr: int  # numbers Adam moved by more than lr (none on a first step: |g| / (|g| + ε) < 1)
    max_ratio: float  # the largest |Adam step| / lr (at most 1 on a first step: |g| / (|g| + ε))
    grad_min: float  # the smallest and largest |g| among the large ones
    grad_max: float


@dataclass
class SeedCount:
    """The first AdamW step over seeds 0 .. seeds-1 with the same settings."""

    seeds: int
    lowered: int  # seeds whose first AdamW step lowers p(target) (by any amount)
    raised_plain: int  # seeds whose plain step (with backtracking) raises it by its margin (plain_margin)
    raised: int = 0  # seeds whose first AdamW step raises it by RISE of its value


@dataclass
class FirstStep(Shown):
    context: str
    target: str
    seed: int
    plain: PlainStep
    adamw: AdamStep
    over_seeds: SeedCount | None  # None when asked for no seeds
    arithmetic: NegLog  # −log p of the untrained model's p(target)
    claims: list[Claim]


# ---- measurements --------------------------------------------------------------------------------------


def _p(model, context_ids: list[int], target_id: int, device) -> float:
    """p(target | context) from the last position, in eval mode."""
    model.eval()
    with torch.no_grad():
        logits = model(torch.tensor([context_ids], device=device))[0, -1]  # (V,)
    return float(torch.softmax(logits.double(), dim=-1)[target_id])


def _plain(model, probe, lr_start: float, device) -> PlainStep:
    # In float64: the rule's effect is first order in lr, so even the smallest lr the form accepts moves p
    # by more than rounding would hide.
    ctx = probe.context_ids[-model.config.context_length :]
    base = copy.deepcopy(model).double().eval()
    logits = base(torch.tensor([ctx], device=device))[0, -1]  # (V,): the position that predicts the target
    loss = -torch.log_softmax(logits, dim=-1)[probe.target_id]  # −log p(target)
    params = [p for p in base.parameters() if p.requires_grad]
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    grads = [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads)]
    grad_sq = float(sum((g**2).sum() for g in grads))
    p_before = math.exp(-float(loss.detach()))
    lr, p_after, halvings = lr_start, p_before, 0
    for halvings in range(MAX_HALVINGS + 1):  # backtracking: halve lr until p rises (first order: it must)
        lr = lr_start / 2**halvings
        stepped = copy.deepcopy(base)
        with torch.no_grad():
            for p, g in zip([p for p in stepped.parameters() if p.requires_grad], grads):
                p -= lr * g  # θ ← θ − lr · ∇(−log p)
        p_after = _p(stepped, ctx, probe.target_id, device)
        if p_after > p_before:
            break
    return PlainStep(
        lr=lr,
        lr_start=lr_start,
        halvings=halvings,
        grad_sq=grad_sq,
        predicted_drop=lr * grad_sq,
        p_before=p_before,
        p_after=p_after,
        loss_before=-math.log(p_before),
        loss_after=-math.log(p_after) if p_after > 0 else math.inf,
    )


def _adam(model, data, cfg, probe, device) -> AdamStep:
    """One step of the real loop on a copy; the batch is the one that step draws (the same seeded generator)."""
    ctx = probe.context_ids[-model.config.context_length :]
    copy_ = copy.deepcopy(model)
    x, y = get_batch(data.train, model.config.context_length, cfg.batch_size, torch.Generator().manual_seed(cfg.seed))
    x, y = x.to(device), y.to(device)  # (B, T): the first step's batch
    p_before = _p(copy_, ctx, probe.target_id, device)
    with torch.no_grad():
        line_before = float(lm_loss(copy_.eval(), x, y))
    trainer = Trainer(copy_, data, cfg, device=device, probe=probe)
    trainer.run(should_stop=lambda: True)  # exactly one update, the training's first
    # Adam's step in units of lr, from the optimizer's own state: m̂ / (√v̂ + ε), with m̂ = m / (1 − β1),
    # v̂ = v / (1 − β2) after one step. Read from the state, not from θ, so float32 rounding of θ cannot hide it.
    moved = large = near = over = 0
    max_ratio, gmin, gmax = 0.0, math.inf, 0.0
    for group in trainer.optimizer.param_groups:
        b1, b2 = group["betas"]
        for p in group["params"]:
            if p.grad is None:
                continue
            st = trainer.optimizer.state[p]
            m_hat = st["exp_avg"].double() / (1 - b1)
            v_hat = st["exp_avg_sq"].double() / (1 - b2)
            ratio = m_hat.abs() / (v_hat.sqrt() + group["eps"])  # |Adam's step| / lr
            g = p.grad.detach().double().abs()  # the gradient the step used (after clipping)
            big = g >= BIG_GRAD
            moved += int((g > 0).sum())
            large += int(big.sum())
            near += int((ratio[big] >= NEAR_LR).sum())
            over += int((ratio > 1 + 1e-6).sum())
            if (g > 0).any():
                max_ratio = max(max_ratio, float(ratio.max()))
            if big.any():
                gmin, gmax = min(gmin, float(g[big].min())), max(gmax, float(g[big].max()))
    with torch.no_grad():
        line_after = float(lm_loss(copy_.eval(), x, y))
    return AdamStep(
        lr=cfg.lr_at(0),
        positions=int(y.numel()),
        p_before=p_before,
        p_after=_p(copy_, ctx, probe.target_id, device),
        line_loss_before=line_before,
        line_loss_after=line_after,
        numbers=sum(p.numel() for p in copy_.parameters()),
        moved=moved,
        large=large,
        near_lr=near,
        over_lr=over,
        max_ratio=max_ratio,
        grad_min=gmin if large else 0.0,
        grad_max=gmax,
    )


_SEED_CACHE: dict[tuple, SeedCount] = {}


def _over_seeds(model, data, cfg, probe, device, seeds: int) -> SeedCount:
    """The plain step and the first AdamW step for fresh models of seeds 0 .. seeds-1 (built as new_run
    builds them: torch.manual_seed(seed), then the model). Cached per settings: the numbers never change."""
    stream = hashlib.sha256(data.train.cpu().numpy().tobytes()).hexdigest()
    key = (
        repr(model.config),
        repr(dataclasses.replace(cfg, seed=0)),
        stream,
        tuple(probe.context_ids),
        probe.target_id,
        str(device),
        seeds,
    )
    if key not in _SEED_CACHE:
        lowered = raised = raised_plain = 0
        for seed in range(seeds):
            with seeded(seed):
                fresh = type(model)(model.config).to(device)
            c = dataclasses.replace(cfg, seed=seed)
            a = _adam(fresh, data, c, probe, device)
            lowered += a.p_after < a.p_before
            raised += a.p_after - a.p_before >= RISE * a.p_before  # the same test as the adamw_first claim
            pl = _plain(fresh, probe, c.lr_at(0), device)
            raised_plain += pl.loss_before - pl.loss_after >= plain_margin(pl)  # the same test as plain_raises
        if len(_SEED_CACHE) > 64:
            _SEED_CACHE.clear()
        _SEED_CACHE[key] = SeedCount(seeds=seeds, lowered=lowered, raised_plain=raised_plain, raised=raised)
    return _SEED_CACHE[key]


# ---- the lesson ----------------------------------------------------------------------------------------


def can_count(model) -> bool:
    """Whether counting over seeds is quick enough for this model (one fresh model and two steps a seed)."""
    return sum(p.numel() for p in model.parameters()) <= COUNT_LIMIT


def first_step(run, *, seeds: int | None = None, lang: str = "zh") -> FirstStep:
    """The text's update rule and the real first AdamW step, each on a copy of `run`'s untrained model.
    `seeds`: count both over seeds 0 .. seeds-1 (0: do not); None: DEFAULT_SEEDS for models up to COUNT_LIMIT
    parameters, else 0."""
    trainer = run.trainer
    if trainer.step != 0:
        raise ValueError(f"the first step needs an untrained run; this one has trained {trainer.step} steps")
    if trainer.probe is None:
        raise ValueError("this run watches no target (no probe)")
    model, probe, cfg, device = run.model, trainer.probe, run.config, trainer.device
    if seeds is None:
        seeds = DEFAULT_SEEDS if can_count(model) else 0
    if not 0 <= seeds <= 100:
        raise ValueError(f"seeds must be from 0 to 100, got {seeds}")
    if seeds and not can_count(model):
        raise ValueError(
            f"this model has more than {COUNT_LIMIT:,} parameters: too large to count over seeds here; ask for seeds=0"
        )
    rng_devices = [device] if torch.device(device).type == "cuda" else []  # dropout on a GPU draws from its own stream
    with (
        torch.random.fork_rng(devices=rng_devices),
        threads_for(model),
    ):  # the run's random streams are left as they were
        plain = _plain(model, probe, cfg.lr_at(0), device)
        adam = _adam(model, data=run.data, cfg=cfg, probe=probe, device=device)
        count = _over_seeds(model, run.data, cfg, probe, device, seeds) if seeds else None
    model.train()
    return FirstStep(
        context=probe.context,
        target=probe.target,
        seed=cfg.seed,
        plain=plain,
        adamw=adam,
        over_seeds=count,
        arithmetic=neg_log(plain.p_before),
        claims=_claims(probe.target, plain, adam, count, lang),
    )


def plain_margin(plain: PlainStep) -> float:
    """What the plain step's fall of −log p must clear: half its first-order estimate lr·‖g‖² (half of −log p
    itself where the estimate overshoots, at a large lr), and more than float64 rounding."""
    return max(FIRST_ORDER * min(plain.predicted_drop, plain.loss_before), ROUNDING)


def _control(lang: str, name: str) -> str:
    return t(f"pipeline.step5.control.{name}", lang)


def _claims(target: str, plain: PlainStep, adam: AdamStep, count: SeedCount | None, lang: str) -> list[Claim]:
    f = lambda x: f"{x:.4f}"  # noqa: E731
    d = lambda a, b: f"{b - a:+.2g}"  # noqa: E731
    pm = plain_margin(plain)
    claims = [
        lead(
            "plain_raises",
            t(
                "pipeline.step5.claim.plain",
                lang,
                target=target,
                lr=f"{plain.lr:g}",
                a=f(plain.p_before),
                b=f(plain.p_after),
                d=d(plain.p_before, plain.p_after),
                halvings=plain.halvings,
                fall=f"{plain.loss_before - plain.loss_after:.3g}",
                est=f"{plain.predicted_drop:.3g}",
                m=f"{pm:.3g}",
            ),
            lang,
            measured=plain.loss_after,
            baseline=plain.loss_before,
            margin=pm,
            lower=True,
            control=_control(lang, "untrained_loss"),
            values={
                "p_before": plain.p_before,
                "p_after": plain.p_after,
                "first_order": plain.predicted_drop,
                "lr": plain.lr,
            },
        ),
        lead(
            "adamw_first",
            t(
                "pipeline.step5.claim.adamw",
                lang,
                target=target,
                lr=f"{adam.lr:g}",
                a=f(adam.p_before),
                b=f(adam.p_after),
                d=d(adam.p_before, adam.p_after),
                m=f(RISE * adam.p_before),
            ),
            lang,
            measured=adam.p_after,
            baseline=adam.p_before,
            margin=RISE * adam.p_before,
            control=_control(lang, "untrained_p"),
            values={"p_before": adam.p_before, "p_after": adam.p_after},
            hint=t("pipeline.step5.hint.adamw", lang),
        ),
        lead(
            "adamw_line",
            t(
                "pipeline.step5.claim.line",
                lang,
                n=adam.positions,
                a=f(adam.line_loss_before),
                b=f(adam.line_loss_after),
                d=d(adam.line_loss_before, adam.line_loss_after),
                m=f(RISE * adam.line_loss_before),
            ),
            lang,
            measured=adam.line_loss_after,
            baseline=adam.line_loss_before,
            lower=True,
            margin=RISE * adam.line_loss_before,
            control=_control(lang, "untrained_line"),
            values={"before": adam.line_loss_before, "after": adam.line_loss_after, "positions": adam.positions},
        ),
        # Adam's first step is m̂/(√v̂ + ε) = g/(|g| + ε): every number with |g| >= 1e-6 moves by 0.99·lr to lr,
        # none by more than lr. The count of numbers off that closed form must be 0.
        within(
            "adamw_sign",
            t(
                "pipeline.step5.claim.sign",
                lang,
                large=f"{adam.large:,}",
                moved=f"{adam.moved:,}",
                numbers=f"{adam.numbers:,}",
                near=f"{adam.near_lr:,}",
                ratio=f"{adam.max_ratio:.6f}",
                gmin=f"{adam.grad_min:.1e}",
                gmax=f"{adam.grad_max:.1e}",
                off=f"{adam.large - adam.near_lr + adam.over_lr:,}",
            ),
            lang,
            measured=adam.large - adam.near_lr + adam.over_lr + (adam.large == 0),
            expected=0,
            tol=0,
            control=_control(lang, "sign"),
            values={
                "large": adam.large,
                "near_lr": adam.near_lr,
                "over_lr": adam.over_lr,
                "max_ratio": adam.max_ratio,
                "moved": adam.moved,
                "numbers": adam.numbers,
            },
        ),
    ]
    if count is not None:
        claims[1:1] = [
            beats_chance(
                "plain_over_seeds",
                t(
                    "pipeline.step5.claim.plain_seeds",
                    lang,
                    target=target,
                    k=count.raised_plain,
                    n=count.seeds,
                    last=count.seeds - 1,
                ),
                lang,
                k=count.raised_plain,
                n=count.seeds,
                p=RANDOM_DIRECTION,
                control=_control(lang, "random_direction"),
            )
        ]
        claims.append(
            beats_chance(
                "adamw_over_seeds",
                t(
                    "pipeline.step5.claim.seeds",
                    lang,
                    target=target,
                    k=count.raised,
                    n=count.seeds,
                    last=count.seeds - 1,
                    lowered=count.lowered,
                ),
                lang,
                k=count.raised,
                n=count.seeds,
                p=RANDOM_DIRECTION,
                control=_control(lang, "random_direction"),
                values={"lowered": count.lowered},
                hint=t("pipeline.step5.hint.adamw", lang),
            )
        )
    return claims

"""The lessons' small training runs, written once: a few hundred steps of a small model, on the CPU, while a page
waits (attnlab.train.loop's Trainer is the long run, with validation, checkpoints and devices).

Step t (0-based) of `steps`:
  lr_t from the schedule (cfg.lr_at),  (x, y) = batch(g),  L = loss(θ; x, y),
  g_θ = ∇θ (L + penalty(θ)),  g_θ <- g_θ · min(1, grad_clip / ‖g_θ‖),  θ <- AdamW(θ, g_θ, lr_t).
The batches come from a generator of their own, torch.Generator().manual_seed(cfg.seed), so runs that share a
seed share their batches; what the model draws itself (dropout) comes from torch's global generator, in the
same order every run.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from attnlab.train.loop import TrainConfig, lm_loss, make_optimizer


def train_small(
    model: torch.nn.Module,
    cfg: TrainConfig,
    batch: Callable[[torch.Generator], tuple],
    loss=lm_loss,
    *,
    steps: int | None = None,
    optimizer: torch.optim.Optimizer | None = None,
    penalty: Callable[[torch.nn.Module], torch.Tensor | None] | None = None,
    on_step: Callable[[int], None] | None = None,
) -> list[float]:
    """Train `model` for `steps` updates (default cfg.steps; 0 is allowed, where a TrainConfig's steps is not) and
    return each step's loss L, read before its update.

    batch(g) -> (x, y): a step's batch, drawn from the generator g.  loss(model, x, y) -> L (default: the next-token
    cross-entropy, lm_loss).  penalty(model) -> a term added to L for the gradient only, read after the forward (a
    MoE's balance loss), or None.  optimizer: default make_optimizer(model, cfg); the rate is set from the schedule
    each step either way.  on_step(step) runs before each update (step = 0 .. steps - 1) and once after the last
    (step = steps): a progress report (which may raise to stop the run) or a measurement."""
    steps = cfg.steps if steps is None else steps
    opt = make_optimizer(model, cfg) if optimizer is None else optimizer
    g = torch.Generator().manual_seed(cfg.seed)
    losses: list[float] = []
    model.train()
    for step in range(steps):
        if on_step is not None:
            on_step(step)
        for group in opt.param_groups:
            group["lr"] = cfg.lr_at(step)
        value = loss(model, *batch(g))  # L on this step's batch
        extra = penalty(model) if penalty is not None else None
        objective = value if extra is None else value + extra
        opt.zero_grad(set_to_none=True)
        objective.backward()
        if cfg.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        losses.append(value.item())
    if on_step is not None:
        on_step(steps)
    return losses

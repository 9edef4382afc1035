"""The two runs behind `attnlab explain induction`: a 2-layer and a 1-layer attention-only GPT, trained with the same
seed, the same batches and the same steps on repeated random tokens, measured on the same evaluation sequences.

Training sequence: n_rep distinct random tokens r (n_rep drawn from [2, n] for each sequence), repeated until the
sequence is 2n + 1 long: r r r ... . The period changes from sequence to sequence, so no position can say where to
look; only the content can (the current token's previous occurrence, and what followed it).
With `shuffle` (the null) each training sequence's tokens are put in a random order: the same tokens, as often, but
nothing follows anything the way it did before, so there is nothing to copy.
Evaluation sequence: n distinct random tokens, then the same n again: [r r], the form of scores.py; and beside it
[r π(r)], the second half the same tokens in another order: a head that looks a fixed distance back scores there
as on [r r], an induction head (which looks where the current token came before) does not.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from attnlab.lessons.common.copying import attention_only, repeats, shuffled
from attnlab.lessons.induction import scores
from attnlab.train import progress

BATCH, LR, BETAS = 32, 3e-3, (0.9, 0.98)  # AdamW, constant rate, no weight decay
N_EVAL = 64  # evaluation sequences, the same at every logged step and for both models
LOG_POINTS = 40  # about this many logged steps, whatever the number of steps


def eval_sequences(seed: int, n: int, vocab: int) -> torch.Tensor:
    """(N_EVAL, 2n) sequences [r r], from a generator of their own."""
    return repeats(torch.Generator().manual_seed(seed + 1), N_EVAL, n, vocab, 2 * n, period=n)


def unrepeated(x_eval: torch.Tensor, seed: int) -> torch.Tensor:
    """(N_EVAL, 2n) [r π(r)]: each sequence's second half its first in a random order, from a generator of its own."""
    n = x_eval.shape[1] // 2
    g = torch.Generator().manual_seed(seed + 3)
    order = torch.rand(len(x_eval), n, generator=g).argsort(dim=-1)  # (N_EVAL, n)
    return torch.cat([x_eval[:, :n], x_eval[:, :n].gather(1, order)], dim=1)


def log_steps(steps: int) -> list[int]:
    """The steps measured: 0, about every steps/LOG_POINTS, and the last."""
    every = max(1, -(-steps // LOG_POINTS))
    return sorted(set(range(0, steps, every)) | {steps})


@dataclass
class Curves:
    """One model's readings at each logged step (on the evaluation sequences; loss: the training batch's)."""

    n_layers: int
    n_params: int
    prefix_matching: list[list[list[float]]] = field(default_factory=list)  # [step][layer][head]
    previous_token: list[list[list[float]]] = field(default_factory=list)  # [step][layer][head]
    icl_score: list[float] = field(default_factory=list)  # nats, per step
    eval_loss: list[float] = field(default_factory=list)  # mean loss over the evaluation sequences, per step
    loss: list[float] = field(
        default_factory=list
    )  # the cross-entropy of that step's training batch, before its update
    unrepeated: list[list[float]] = field(
        default_factory=list
    )  # [layer][head]: prefix-matching on [r π(r)], at the end


@torch.no_grad()
def measure(model, x: torch.Tensor, n: int) -> tuple[list[list[float]], list[list[float]], float, float]:
    """On [r r] sequences x (B, 2n): prefix-matching and previous-token per layer and head, the ICL score, the loss."""
    from attnlab.inspect import run_with

    logits, tr = run_with(model, x)  # (B, 2n, V)
    losses = F.cross_entropy(logits[:, :-1].transpose(1, 2), x[:, 1:], reduction="none")  # (B, 2n - 1)
    pm, prev = [], []
    for layer in range(model.config.n_layers):
        w = tr[f"layers.{layer}.attn.weights"]  # (B, H, 2n, 2n)
        pm.append(scores.prefix_matching(w, n).tolist())
        prev.append(scores.previous_token(w).tolist())
    return pm, prev, scores.icl_score(losses, n), float(losses.mean())


def config(n_layers: int, n: int, vocab: int, d_model: int, positions: str):
    return attention_only(n_layers, 2 * n, vocab, d_model, positions)


def train(
    name: str,
    n_layers: int,
    *,
    steps: int,
    seed: int,
    n: int,
    vocab: int,
    d_model: int,
    positions: str,
    x_eval: torch.Tensor,
    x_unrepeated: torch.Tensor,
    shuffle: bool = False,
):
    """Train one model, reading it at log_steps(steps), and on x_unrepeated once trained. Returns (model, Curves).
    The weights come from the seed alone (redraw), the batches from a generator of their own: both models see the
    same batches (with `shuffle`, each shuffled by a generator of its own, so the batches drawn stay the same)."""
    from attnlab.lessons.common.weights import redraw
    from attnlab.models import GPT

    model = redraw(GPT(config(n_layers, n, vocab, d_model, positions)), seed)
    curves = Curves(n_layers, sum(p.numel() for p in model.parameters()))
    opt = torch.optim.AdamW(
        model.parameters(), lr=LR, betas=BETAS, weight_decay=0.0, foreach=True
    )  # bitwise the loop's update, faster
    g = torch.Generator().manual_seed(seed)
    g_order = torch.Generator().manual_seed(seed + 2)
    logged = set(log_steps(steps))
    # Not train.small: a logged step reads its batch's loss before the update, and one more batch after the last
    # update is measured, never trained on.
    for step in range(steps + 1):
        progress.report(name, step, steps)  # the page shows it; stops here when the page has gone
        x = repeats(g, BATCH, n, vocab, 2 * n + 1)  # (B, 2n + 1): inputs x[:, :-1], targets x[:, 1:]
        if shuffle:
            x = shuffled(x, g_order)
        model.train()
        loss = F.cross_entropy(model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten())  # (B·2n, V) vs (B·2n,)
        if step in logged:
            pm, prev, icl, eval_loss = measure(model, x_eval, n)
            curves.prefix_matching.append(pm)
            curves.previous_token.append(prev)
            curves.icl_score.append(icl)
            curves.eval_loss.append(eval_loss)
            curves.loss.append(loss.item())
        if step < steps:  # the last batch is only measured
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    model.eval()
    curves.unrepeated = measure(model, x_unrepeated, n)[0]
    return model, curves


def first_crossing(steps: list[int], prefix_matching: list[list[list[float]]], threshold: float) -> int | None:
    """The first logged step at which some head's prefix-matching score passes `threshold`, or None."""
    for step, layers in zip(steps, prefix_matching):
        if max(max(heads) for heads in layers) > threshold:
            return step
    return None

"""attnlab.train.small.train_small, the lessons' one small-training loop."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attnlab.lessons.common.weights import redraw
from attnlab.models import GPT, GPTConfig
from attnlab.text import JINGYESI, CharTokenizer
from attnlab.train.data import get_batch, token_stream
from attnlab.train.loop import TrainConfig, make_optimizer
from attnlab.train.small import train_small

TOK = CharTokenizer.train([JINGYESI])
IDS = token_stream([JINGYESI * 4], TOK)
CFG = TrainConfig(steps=6, batch_size=4, lr=1e-2, warmup_steps=2, seed=3)


def model() -> GPT:
    return redraw(GPT(GPTConfig(vocab_size=TOK.vocab_size, context_length=8, d_model=16, n_heads=2, n_layers=1)), 0)


def batch(g):
    return get_batch(IDS, 8, CFG.batch_size, g)  # (B, T) each


def test_it_is_the_loop_the_lessons_wrote_by_hand():
    by_hand, helped = model(), model()
    opt, g, losses = make_optimizer(by_hand, CFG), torch.Generator().manual_seed(CFG.seed), []
    for step in range(CFG.steps):
        for group in opt.param_groups:
            group["lr"] = CFG.lr_at(step)
        x, y = batch(g)
        loss = F.cross_entropy(by_hand(x).flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(by_hand.parameters(), CFG.grad_clip)
        opt.step()
        losses.append(loss.item())
    assert train_small(helped, CFG, batch) == losses
    assert all(torch.equal(a, b) for a, b in zip(by_hand.parameters(), helped.parameters()))


def test_on_step_runs_before_each_update_and_after_the_last():
    seen: list[tuple[int, float]] = []
    m = model()
    first = m.embed.tok.weight
    losses = train_small(m, CFG, batch, on_step=lambda step: seen.append((step, float(first.detach().sum()))))
    assert [s for s, _ in seen] == list(range(CFG.steps + 1)) and len(losses) == CFG.steps
    assert seen[0][1] != seen[1][1]  # on_step(1) sees the weights after the first update
    seen.clear()
    assert train_small(model(), CFG, batch, steps=0, on_step=lambda step: seen.append((step, 0.0))) == []
    assert seen == [(0, 0.0)]  # no update: only the report that it is done


def test_the_penalty_moves_the_gradient_not_the_reported_loss():
    plain = train_small(model(), CFG, batch, steps=2)
    heavy = train_small(model(), CFG, batch, steps=2, penalty=lambda m: 10 * m.embed.tok.weight.pow(2).sum())
    assert heavy[0] == plain[0] and heavy[1] != plain[1]  # the same first batch and loss; then other weights
    assert train_small(model(), CFG, batch, steps=2, penalty=lambda m: None) == plain

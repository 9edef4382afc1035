"""The models and prompts behind `attnlab explain prompting`.

Training: a 2-layer and a 1-layer attention-only GPT (lessons/common/copying.py), the same seed, batches and steps,
on the copying task only: random tokens that repeat with a period drawn anew for each sequence. Neither ever sees
a key, a value or a mapping. With `shuffle` (the null) each training sequence's tokens are shuffled: the same
tokens as often, nothing to copy.
Prompt: a fresh random mapping σ from K keys to K values (each value drawn at random: a function, not a
permutation), k demonstrations with distinct keys, written key value key value ..., then a query key drawn from
all K: "3→g, 5→b, 0→?". The model's answer is its most probable value token at the last position. A reader who
copies a demonstrated key's value and guesses otherwise is right with probability k/K + (K - k)/K²: the ceiling.
Deranged labels: the same prompt with each demonstration's value moved to another demonstration (none left in
place): the values are the mapping's, but attached to the wrong keys, so copying carries nothing about σ(q).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.lessons.common.copying import attention_only, repeats, shuffled
from attnlab.train import progress

N = 16  # the copying sequences: periods up to N, 2N + 1 tokens
VOCAB = 32  # token ids; keys are 0 .. K-1 and values K .. 2K-1
D_MODEL = 32
BATCH, LR, BETA2 = 32, 3e-3, 0.98  # AdamW, constant rate, no weight decay: the induction topic's recipe
N_PROMPTS = 500  # evaluation prompts per number of shots


@dataclass
class Prompts:
    x: torch.Tensor  # (P, 2k + 1): k4 v4 k1 v1 ... q
    answer: torch.Tensor  # (P,) σ(q), as a value index 0 .. K-1
    shown: torch.Tensor  # (P,) bool: q is among the demonstrated keys


def train(name: str, n_layers: int, steps: int, seed: int, shuffle: bool):
    """One model trained on the copying task (or its shuffled null) with the one training helper."""
    from attnlab.lessons.common.weights import redraw
    from attnlab.models import GPT
    from attnlab.train.loop import TrainConfig
    from attnlab.train.small import train_small

    model = redraw(GPT(attention_only(n_layers, 2 * N, VOCAB, D_MODEL, "sinusoidal")), seed)
    cfg = TrainConfig(
        steps=max(steps, 1),
        batch_size=BATCH,
        lr=LR,
        schedule="constant",
        weight_decay=0.0,
        beta2=BETA2,
        grad_clip=None,
        seed=seed,
    )
    g_order = torch.Generator().manual_seed(seed + 2)

    def batch(g: torch.Generator):
        x = repeats(g, BATCH, N, VOCAB, 2 * N + 1)  # (B, 2N + 1)
        if shuffle:
            x = shuffled(x, g_order)
        return x[:, :-1], x[:, 1:]

    train_small(model, cfg, batch, steps=steps, on_step=lambda step: progress.report(name, step, steps))
    model.eval()
    return model


def prompts(seed: int, keys: int, shots: int, deranged: bool = False) -> Prompts:
    """N_PROMPTS prompts of `shots` demonstrations of fresh mappings over `keys` keys, from a generator of their own
    (the same prompts for every model; `deranged` moves each value to another demonstration)."""
    g = torch.Generator().manual_seed(10_000 * seed + 100 * keys + shots)
    P = N_PROMPTS
    shown_keys = torch.rand(P, keys, generator=g).argsort(dim=-1)[:, :shots]  # (P, k) distinct
    sigma = torch.randint(0, keys, (P, keys), generator=g)  # (P, K): a mapping per prompt
    q = torch.randint(0, keys, (P, 1), generator=g)  # (P, 1)
    values = sigma.gather(1, shown_keys)  # (P, k)
    if deranged and shots > 1:
        shift = torch.randint(1, shots, (P, 1), generator=g)  # a rotation by 1 .. k-1: no value stays
        values = values.gather(1, (torch.arange(shots)[None] + shift) % shots)
    pairs = torch.stack([shown_keys, values + keys], dim=2).reshape(P, 2 * shots)  # (P, 2k)
    return Prompts(torch.cat([pairs, q], dim=1), sigma.gather(1, q)[:, 0], (shown_keys == q).any(dim=1))


def answers(model, p: Prompts, keys: int, edits=None) -> torch.Tensor:
    """(P,) the model's most probable value at the last position, as a value index."""
    from attnlab.inspect import run_with

    logits, _ = run_with(model, p.x, edits)  # (P, T, V)
    return logits[:, -1, keys : 2 * keys].argmax(dim=-1)


def accuracy(model, p: Prompts, keys: int, edits=None) -> float:
    return float((answers(model, p, keys, edits) == p.answer).float().mean())


def label_attention(model, p: Prompts, keys: int) -> list[float]:
    """Per head of the last layer: its mean attention from the query onto the value that followed the query's key,
    over the prompts whose query was demonstrated (what an induction head does here)."""
    from attnlab.inspect import run_with

    _, tr = run_with(model, p.x)
    w = tr[f"layers.{model.config.n_layers - 1}.attn.weights"][:, :, -1]  # (P, H, T): from the query
    keys_at = p.x[:, 0:-1:2]  # (P, k) the demonstrated keys
    where = (keys_at == p.x[:, -1:]).float().argmax(dim=1) * 2 + 1  # (P,) the position of the query key's value
    hit = w.gather(2, where[:, None, None].expand(-1, w.shape[1], 1))[:, :, 0]  # (P, H)
    return hit[p.shown].mean(dim=0).tolist() if bool(p.shown.any()) else [0.0] * w.shape[1]


def ceiling(shots: int, keys: int) -> float:
    """The best any reader of the prompt can do: copy a demonstrated key's value, guess among K otherwise."""
    return shots / keys + (keys - shots) / keys**2

"""Skip-gram with negative sampling (Mikolov et al. 2013, "Distributed Representations of Words and Phrases").

Every character c has two vectors: v_c = W_in[c] when it is the centre, u_o = W_out[o] when it is a context.
A training pair (c, o) is a centre and a character within `window` places of it; K negatives k_1..k_K are drawn
from the unigram distribution raised to 3/4, P_n(w) ∝ count(w)^0.75 (rare characters drawn a little more often
than their share). The loss of one pair is

    L = -log σ(u_o · v_c) - Σ_k log σ(-u_k · v_c)

"predict the context": make the true context's score high, the noise contexts' scores low. Its gradient in
closed form (σ' = σ(1 - σ) and d/dx log σ(x) = 1 - σ(x)):

    ∂L/∂v_c = (σ(u_o·v_c) - 1) u_o + Σ_k σ(u_k·v_c) u_k
    ∂L/∂u_o = (σ(u_o·v_c) - 1) v_c
    ∂L/∂u_k = σ(u_k·v_c) v_c            (a negative drawn twice gets both terms)

`gradients` writes that out; `sgd_step` applies it by hand (what the course teaches); `autograd_step` lets torch
differentiate the same loss. Both minimise the batch mean, so one step of either is the same update (a test
holds them equal). Left out from the original, to keep the idea bare: subsampling of frequent words, the
randomly shrunk window, and skipping a negative that equals the true context.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

POWER = 0.75  # the noise distribution's exponent (Mikolov et al. found 3/4 best)


class SkipGram(nn.Module):
    """Two embedding tables, W_in (centres) and W_out (contexts); forward gives each pair's loss."""

    def __init__(
        self, vocab_size: int, d: int, *, generator: torch.Generator | None = None, dtype: torch.dtype = torch.float64
    ):
        super().__init__()
        # word2vec's own start: W_in uniform in ±0.5/d, W_out zero (so the first steps move W_out only)
        self.W_in = nn.Parameter((torch.rand(vocab_size, d, generator=generator, dtype=dtype) - 0.5) / d)  # (V, d)
        self.W_out = nn.Parameter(torch.zeros(vocab_size, d, dtype=dtype))  # (V, d)

    def forward(self, center: Tensor, context: Tensor, negatives: Tensor) -> Tensor:
        """(B,), (B,), (B, K) ids -> (B,) losses -log σ(u_o·v_c) - Σ_k log σ(-u_k·v_c)."""
        v = self.W_in[center]  # (B, d)
        u_o = self.W_out[context]  # (B, d)
        u_k = self.W_out[negatives]  # (B, K, d)
        pos = (u_o * v).sum(-1)  # (B,)  u_o · v_c
        neg = torch.einsum("bkd,bd->bk", u_k, v)  # (B, K)  u_k · v_c
        return -F.logsigmoid(pos) - F.logsigmoid(-neg).sum(-1)  # (B,)


def gradients(v: Tensor, u_o: Tensor, u_k: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The closed-form gradient of each pair's loss: (B, d), (B, d), (B, K, d) -> ∂L/∂v_c, ∂L/∂u_o, ∂L/∂u_k."""
    s_o = torch.sigmoid((u_o * v).sum(-1, keepdim=True))  # (B, 1)  σ(u_o·v_c)
    s_k = torch.sigmoid(torch.einsum("bkd,bd->bk", u_k, v)).unsqueeze(-1)  # (B, K, 1)  σ(u_k·v_c)
    d_v = (s_o - 1) * u_o + (s_k * u_k).sum(1)  # (B, d)
    d_uo = (s_o - 1) * v  # (B, d)
    d_uk = s_k * v.unsqueeze(1)  # (B, K, d)
    return d_v, d_uo, d_uk


@torch.no_grad()
def table_gradients(model: SkipGram, center: Tensor, context: Tensor, negatives: Tensor) -> tuple[Tensor, Tensor]:
    """∂(mean loss)/∂W_in and ∂(mean loss)/∂W_out, (V, d) each, from the closed form: a character that occurs
    several times in the batch (as centre, context or negative) gets the sum of its pairs' gradients."""
    B = len(center)
    v, u_o, u_k = model.W_in[center], model.W_out[context], model.W_out[negatives]  # (B, d) (B, d) (B, K, d)
    d_v, d_uo, d_uk = gradients(v, u_o, u_k)
    G_in = torch.zeros_like(model.W_in).index_add_(0, center, d_v) / B  # (V, d)
    G_out = (
        torch.zeros_like(model.W_out)
        .index_add_(0, context, d_uo)
        .index_add_(0, negatives.flatten(), d_uk.flatten(0, 1))
        / B
    )  # (V, d)
    return G_in, G_out


@torch.no_grad()
def sgd_step(model: SkipGram, center: Tensor, context: Tensor, negatives: Tensor, lr: float) -> float:
    """One SGD step W <- W - lr · ∂L/∂W on the batch mean loss with the hand-written gradient; returns the loss
    before the step."""
    loss = model(center, context, negatives).mean().item()
    G_in, G_out = table_gradients(model, center, context, negatives)
    model.W_in -= lr * G_in
    model.W_out -= lr * G_out
    return loss


def autograd_step(model: SkipGram, center: Tensor, context: Tensor, negatives: Tensor, lr: float) -> float:
    """The same step, with torch's autograd computing the gradient of the same batch mean loss."""
    loss = model(center, context, negatives).mean()
    model.zero_grad(set_to_none=True)
    loss.backward()
    with torch.no_grad():
        for p in (model.W_in, model.W_out):
            p -= lr * p.grad
    return loss.item()


def noise_distribution(counts: Tensor, power: float = POWER) -> Tensor:
    """(V,) counts -> (V,) P_n(w) = count(w)^power / Σ count^power (a character never seen is never drawn)."""
    weights = counts.double().clamp(min=0) ** power  # (V,)
    return weights / weights.sum()


def pairs(ids: Tensor, window: int, skip: int | None = None) -> tuple[Tensor, Tensor]:
    """Every (centre, context) pair at distance 1..window in the (N,) stream, both ways; a pair with the `skip`
    id (the end-of-text mark between texts) is left out, so no pair crosses from one text into the next."""
    centers, contexts = [], []
    for o in range(1, window + 1):
        a, b = ids[:-o], ids[o:]  # (N - o,) each: a character and the one o places after it
        centers += [a, b]
        contexts += [b, a]
    c, o = torch.cat(centers), torch.cat(contexts)  # (P,) each
    if skip is not None:
        keep = (c != skip) & (o != skip)
        c, o = c[keep], o[keep]
    return c, o


class Diverged(FloatingPointError):
    """SGD left the floats (a learning rate too large for the batch): the loss of step `step` is inf or nan."""

    def __init__(self, step: int, lr: float):
        super().__init__(f"training diverged at step {step} with lr={lr:g}: the loss is not a finite number")
        self.step, self.lr = step, lr


def train(
    model: SkipGram,
    center: Tensor,
    context: Tensor,
    noise: Tensor,
    *,
    steps: int,
    batch: int,
    k: int,
    lr: float,
    generator: torch.Generator,
    hand: bool = True,
    on_step: Callable[[int, int], None] | None = None,
) -> list[float]:
    """`steps` SGD steps on random batches of the pairs, k negatives each from `noise`, the learning rate falling
    linearly to 0 as in word2vec; the loss of each batch before its step. on_step(step, steps) after each.
    Diverged as soon as a batch's loss is not finite."""
    step_fn = sgd_step if hand else autograd_step
    losses = []
    for step in range(steps):
        pick = torch.randint(len(center), (batch,), generator=generator)  # (B,)
        negatives = torch.multinomial(noise, batch * k, replacement=True, generator=generator).view(batch, k)  # (B, K)
        losses.append(step_fn(model, center[pick], context[pick], negatives, lr * (1 - step / steps)))
        if not math.isfinite(losses[-1]):  # the tables overflowed: every later step computes on inf and nan, slowly
            raise Diverged(step, lr)
        if on_step is not None:
            on_step(step + 1, steps)
    return losses


__all__ = [
    "Diverged",
    "SkipGram",
    "gradients",
    "table_gradients",
    "sgd_step",
    "autograd_step",
    "noise_distribution",
    "pairs",
    "train",
    "POWER",
]

"""Mixture of experts: a top-k routed FFN (Shazeer et al. 2017; Switch Transformer, Fedus et al. 2021).

Each token x (one position's d_model vector) is sent to k of E experts, each an ordinary FeedForward:

    p(x)   = softmax(x W_r)                          router probabilities over the E experts, (E,)
    S(x)   = the k experts with the largest p_i(x)
    g_i(x) = p_i(x)                       if k = 1   (Switch: the raw probability, so the router gets a gradient)
           = p_i(x) / sum_{j in S} p_j(x) if k > 1   (renormalised over the chosen k, as Mixtral and GShard)
    y(x)   = sum_{i in S(x)} g_i(x) · FFN_i(x)

Capacity: an expert takes at most C = ceil(capacity_factor · N · k / E) of the N tokens of a forward pass.
Tokens queue in order (every token's first choice before any second choice; within a choice, position order,
batch row by row); a choice past an expert's C is dropped: it adds nothing to y, so a token whose every choice
was dropped leaves the layer as zeros and only the residual connection carries it on.

Load balancing (Switch eq. 4): aux = E · sum_i f_i · P_i, with f_i the fraction of the N·k choices routed to
expert i (before any drop) and P_i the mean router probability of expert i over the N tokens. It is 1 when the
routing is perfectly uniform (f_i = P_i = 1/E) and E when every token goes to one expert with probability 1;
f is a count (no gradient), so the gradient reaches the router through P. After each forward the module holds
`aux_loss`, `tokens_per_expert` (choices routed to each expert), `kept_per_expert`, `dropped`, `choice` (each
token's k experts, the router's choice) and `kept` (False where the capacity dropped it) for a lesson to read.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlab.nn.feedforward import FeedForward


def balance_loss(tokens_per_expert: Tensor, probs: Tensor) -> Tensor:
    """E · sum_i f_i · P_i. tokens_per_expert: (E,) choices routed to each expert; probs: (N, E) router softmax."""
    E = probs.shape[-1]
    f = tokens_per_expert.to(probs.dtype) / tokens_per_expert.sum().clamp(min=1)  # (E,) fraction routed
    P = probs.mean(0)  # (N, E) -> (E,) mean router probability
    return E * (f * P).sum()


class MoE(nn.Module):
    """A top-k routed mixture of E FeedForward experts with a capacity limit; same shape in and out."""

    def __init__(
        self,
        d_model: int,
        d_ff: int | None = None,
        *,
        n_experts: int = 4,
        top_k: int = 1,
        capacity_factor: float = 1.25,
        activation: str = "relu",
        dropout: float = 0.0,
        bias: bool = True,
    ):
        super().__init__()
        if not 1 <= top_k <= n_experts:
            raise ValueError(f"top_k must be in [1, n_experts={n_experts}], got {top_k}")
        if not capacity_factor > 0:
            raise ValueError(f"capacity_factor must be > 0, got {capacity_factor!r}")
        self.n_experts, self.top_k, self.capacity_factor = n_experts, top_k, capacity_factor
        self.router = nn.Linear(d_model, n_experts, bias=False)  # W_r: (d_model -> E), no bias (Switch)
        self.experts = nn.ModuleList(
            FeedForward(d_model, d_ff, activation=activation, dropout=dropout, bias=bias) for _ in range(n_experts)
        )
        # what the last forward did (read by the training loop and the lessons)
        self.aux_loss: Tensor | None = None
        self.tokens_per_expert: Tensor | None = None
        self.kept_per_expert: Tensor | None = None
        self.n_dropped: Tensor | None = None
        self.choice: Tensor | None = None
        self.kept: Tensor | None = None

    @property
    def dropped(self) -> int:
        """Choices the last forward dropped for want of capacity."""
        return 0 if self.n_dropped is None else int(self.n_dropped)

    def capacity(self, n_tokens: int) -> int:
        """C = ceil(capacity_factor · N · k / E): the most tokens one expert takes in a forward pass."""
        return math.ceil(self.capacity_factor * n_tokens * self.top_k / self.n_experts)

    def forward(self, x: Tensor) -> Tensor:
        """x: (B, T, d_model) -> (B, T, d_model)."""
        E, k = self.n_experts, self.top_k
        tokens = x.reshape(-1, x.shape[-1])  # (N, d_model), N = B·T
        N = tokens.shape[0]
        logits = self.router(tokens)  # (N, d_model) @ (d_model, E) -> (N, E)
        probs = F.softmax(logits.to(torch.promote_types(logits.dtype, torch.float32)), dim=-1)  # (N, E) p(x), fp32+
        top_p, expert = probs.topk(k, dim=-1)  # (N, k) each: the chosen experts, largest p first
        gate = top_p if k == 1 else top_p / top_p.sum(-1, keepdim=True)  # (N, k) g_i(x)

        # Capacity: queue the choices slot by slot (all first choices, then all second ...), each in token order.
        chosen = F.one_hot(expert, E)  # (N, k, E)
        queue = chosen.transpose(0, 1).reshape(k * N, E)  # (k·N, E) slot-major
        place = (queue.cumsum(0) - 1) * queue  # (k·N, E) the choice's place in its expert's queue
        fits = (place < self.capacity(N)).logical_and(queue.bool()).any(-1)  # (k·N,)
        kept = fits.reshape(k, N).T  # (N, k) True where the choice was taken

        y = torch.zeros_like(tokens)  # (N, d_model): a dropped choice adds nothing
        for i, ffn in enumerate(self.experts):
            row, slot = torch.where((expert == i) & kept)  # the tokens expert i takes, and which of their choices
            if row.numel():
                y.index_add_(0, row, gate[row, slot, None].to(y.dtype) * ffn(tokens[row]).to(y.dtype))  # (n_i, d_model)

        counts = chosen.sum((0, 1))  # (E,) choices routed to each expert, before the capacity
        self.aux_loss = balance_loss(counts, probs)
        self.tokens_per_expert = counts.detach()
        self.kept_per_expert = (chosen * kept[..., None]).sum((0, 1)).detach()  # (E,)
        self.n_dropped = (~kept).sum()  # read through `dropped`: no wait for the device unless someone asks
        self.choice = expert.reshape(*x.shape[:-1], k).detach()  # (B, T, k) the router's choices
        self.kept = kept.reshape(*x.shape[:-1], k)  # (B, T, k) False where the capacity dropped the choice
        return y.reshape(x.shape)  # (B, T, d_model)


def moe_layers(model: nn.Module) -> list[MoE]:
    """The MoE layers of a model, in order (empty for a dense model)."""
    return [m for m in model.modules() if isinstance(m, MoE)]


def aux_loss(model: nn.Module) -> Tensor | None:
    """The sum of the MoE layers' balance losses from the model's last forward pass (None: no MoE layer)."""
    losses = [m.aux_loss for m in moe_layers(model) if m.aux_loss is not None]
    return torch.stack(losses).sum() if losses else None

"""One head of width d_model against h heads of width d_model / h: the same parameters, the same FLOPs.

The h heads are one d_model x d_model projection cut into h slices, so W_Q, W_K, W_V, W_O cost 4 d^2 either
way, and the scores cost h * 2 n^2 (d/h) = 2 n^2 d. What h buys is h separate softmax patterns. The counts
are taken from our MultiHeadAttention itself (parameters by numel, FLOPs by torch's FlopCounterMode on
meta tensors, so any n costs no memory). Then a one-layer, two-head GPT is trained for a few hundred
steps on a task that needs two looks, and each head is described by where its weight goes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import torch

from attnlab.i18n import t
from attnlab.lessons.params import Claim, Param, ParamError, check, lesson, seeded

PARAMS = (
    Param("d_model", "int", 512, 8, 4096, step=8, log=True, help="model width"),
    Param("n_heads", "int", 8, 1, 64, step=1, log=True, help="heads (divides d_model)"),
    Param("n", "int", 128, 1, 65536, step=1, log=True, help="sequence length"),
    Param("train_steps", "int", 300, 0, 2000, step=50, help="steps of the tiny GPT whose heads are shown (0: skip)"),
    Param("seed", "int", 4, 0, 2**31 - 1, step=1, help="random seed of the trained model (the split into heads depends on it)"),
)


@dataclass
class Variant:
    n_heads: int
    d_k: int
    params: int  # counted on the module
    flops: int  # FlopCounterMode on the explicit attention path
    flops_analytic: int  # 8 n d^2 (four projections) + 4 n^2 d (scores and weighted sum)
    flops_by_op: dict[str, int]
    weight_entries: int  # h n^2 attention weights: the one thing more heads do cost


@dataclass
class HeadPattern:
    layer: int
    head: int
    weights: list[list[float]]  # (T, T), causal
    self_share: float  # mean weight a query puts on itself
    previous_share: float  # on the token just before it
    first_share: float  # on the first token
    mean_distance: float  # mean of (i - j) under the weights: how far back the head reads
    entropy: float  # mean row entropy, nats
    kind: str  # "self" | "previous" | "first" | "spread", the largest share (spread when none dominates)
    kind_label: str = ""  # the kind in the requested language


@dataclass
class MultiheadResult:
    topic: str
    params: dict
    one_head: Variant
    many_heads: Variant
    final_loss: float | None  # the two-looks task's training loss
    accuracy: float | None  # on fresh sequences
    heads: list[HeadPattern]
    claims: list[Claim]


def count(d_model: int, n_heads: int, n: int) -> Variant:
    """Parameters and FLOPs of one MultiHeadAttention(d_model, n_heads) self-attention on n tokens."""
    from torch.utils.flop_counter import FlopCounterMode

    from attnlab.nn import MultiHeadAttention

    with torch.device("meta"):  # shapes only: no memory, no time, any n
        layer = MultiHeadAttention(d_model, n_heads)
        x = torch.empty(1, n, d_model)
    with FlopCounterMode(display=False) as counter:
        layer(x, need_weights=True)  # the explicit path: its matmuls are what the counter sees
    by_op = {str(op).removeprefix("aten."): int(v) for op, v in counter.get_flop_counts()["Global"].items()}
    return Variant(
        n_heads, d_model // n_heads, sum(p.numel() for p in layer.parameters()), int(counter.get_total_flops()),
        8 * n * d_model**2 + 4 * n**2 * d_model, by_op, n_heads * n * n,
    )


def describe(w: torch.Tensor) -> dict:
    """Where a causal (T, T) weight matrix puts its mass, over the queries i >= 2 (there self, previous and
    first are three different keys)."""
    T = w.shape[0]
    i = torch.arange(T)
    rows = torch.arange(2, T)
    shares = {
        "self": w[rows, rows].mean().item(),
        "previous": w[rows, rows - 1].mean().item(),
        "first": w[rows, 0].mean().item(),
    }
    kind = max(shares, key=shares.get)
    if shares[kind] < 0.4:
        kind = "spread"
    distance = (w[rows] * (i[rows, None] - i[None, :]).clamp_min(0)).sum(-1).mean().item()
    ent = -(w[rows] * torch.log(w[rows].clamp_min(1e-12))).sum(-1).mean().item()
    return dict(self_share=shares["self"], previous_share=shares["previous"], first_share=shares["first"],
                mean_distance=distance, entropy=ent, kind=kind)


V_TASK, T_TASK = 6, 8  # the two-looks task: 6 input symbols, sequences of 8


@lru_cache(maxsize=8)
def trained_heads(steps: int, seed: int) -> tuple[float, float, list[HeadPattern]]:
    """Train a one-layer, two-head GPT on a task that needs two looks, then read its heads.

    The task: at position i >= 1 predict the pair (x_{i-1}, x_0), the token just before and the first token,
    as one class out of 6 x 6. One softmax can hardly look in two places at once; two heads can each take one.
    Returns (final training loss, accuracy on fresh sequences, the heads averaged over those sequences).
    """
    from attnlab.models import GPT, GPTConfig
    from attnlab.trace import trace

    def batch(g: torch.Generator, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.randint(0, V_TASK, (size, T_TASK), generator=g)  # (B, T)
        previous = torch.cat([x[:, :1], x[:, :-1]], dim=1)  # (B, T): x_{i-1}
        return x, previous * V_TASK + x[:, :1]  # target class = (x_{i-1}, x_0)

    with seeded(seed):
        g = torch.Generator().manual_seed(seed)
        model = GPT(GPTConfig(vocab_size=V_TASK**2, context_length=T_TASK, d_model=32, n_heads=2, n_layers=1))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
        loss = torch.tensor(float("nan"))
        for _ in range(steps):
            x, y = batch(g, 64)
            logits = model(x)  # (B, T, 36)
            loss = torch.nn.functional.cross_entropy(logits[:, 1:].flatten(0, 1), y[:, 1:].flatten())
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        x, y = batch(g, 256)
        with torch.no_grad():
            tr = trace(model, x)
    accuracy = (tr.output[:, 1:].argmax(-1) == y[:, 1:]).float().mean().item()
    w = tr["layers.0.attn.weights"].mean(0)  # (H, T, T), averaged over the 256 sequences
    heads = [HeadPattern(0, h, w[h].tolist(), **describe(w[h])) for h in range(w.shape[0])]
    return float(loss.item()), accuracy, heads


@lesson
def multihead(d_model: int = 512, n_heads: int = 8, n: int = 128, train_steps: int = 300, seed: int = 4, *, lang: str = "zh") -> MultiheadResult:
    """Count one wide head against h narrow heads, then show what a trained model's heads attend to."""
    p = check(PARAMS, dict(d_model=d_model, n_heads=n_heads, n=n, train_steps=train_steps, seed=seed))
    d_model, n_heads, n = p["d_model"], p["n_heads"], p["n"]
    if d_model % n_heads:
        raise ParamError(f"d_model must be divisible by n_heads, got d_model={d_model}, n_heads={n_heads}", "n_heads",
                         "explain.error.divisible", width="d_model", d=d_model, h=n_heads)
    one, many = count(d_model, 1, n), count(d_model, n_heads, n)
    loss, accuracy, heads = trained_heads(p["train_steps"], p["seed"]) if p["train_steps"] else (None, None, [])
    heads = [replace(h, kind_label=t(f"explain.plot.mh.kind.{h.kind}", lang)) for h in heads]  # the cache stays untouched
    claims = [
        Claim("params_equal", t("explain.multihead.claim.params", lang, one=one.params, many=many.params, h=n_heads),
              many.params, one.params, many.params == one.params),
        Claim("flops_equal", t("explain.multihead.claim.flops", lang, one=one.flops, many=many.flops, h=n_heads),
              many.flops, one.flops, many.flops == one.flops),
        Claim("flops_analytic", t("explain.multihead.claim.analytic", lang, counted=many.flops, formula=many.flops_analytic),
              many.flops, many.flops_analytic, many.flops == many.flops_analytic),
    ]
    if heads:
        kinds = [h.kind for h in heads]
        claims.append(Claim("heads_differ", t("explain.multihead.claim.heads", lang, kinds=" / ".join(kinds), acc=accuracy),
                            float(len(set(kinds))), 2.0, len(set(kinds)) == len(kinds)))
    return MultiheadResult("multihead", p, one, many, loss, accuracy, heads, claims)

"""One head of width d_model against h heads of width d_model / h: the same parameters, the same FLOPs.

The h heads are one d_model x d_model projection cut into h slices, so W_Q, W_K, W_V, W_O cost 4 d^2 either
way, and the scores cost h * 2 n^2 (d/h) = 2 n^2 d. What h buys is h separate softmax patterns. The counts
are taken from our MultiHeadAttention itself (parameters by numel, FLOPs by torch's FlopCounterMode on
meta tensors, so any n costs no memory).

Then what h separate softmaxes can do that one cannot, proved and measured. The task: read x_0 x_1 x_2 over
{0, 1} and predict y = x_0 XOR x_1 at position 2. The model is one attention layer with a linear read-out
(our Embedding, MultiHeadAttention and a Linear: GPT's first block without its FFN and LayerNorms, so
nothing after the attention can compute). With one head the logit difference at position 2 is
(sum_j e^{s_j} u_j) / (sum_j e^{s_j}) + g, whose sign is that of sum_j e^{s_j} (u_j + g): a sum of one term
for x_0 and one for x_1 (x_2 held fixed). An additive F(x_0) + G(x_1) cannot be XOR (the four cases added
up give both > 0 and < 0), so for each x_2 at least one of the four (x_0, x_1) is wrong: at most 6 of the 8
sequences, 75%. Two heads can: one looks at the 1s (OR), one at the 0s (AND), and OR - AND is XOR; the
lesson builds those weights by hand and checks 8 of 8. Trained from ten seeds, the lesson counts how often
gradient descent finds such a solution with 1, 2 and 4 heads of the same total width.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, replace
from functools import lru_cache

import torch
from torch import nn

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, beats_chance, chance_count, lead, within
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import CHANCE, Null
from attnlab.lessons.common.params import Param, check, heads_divide, lesson, seeded
from attnlab.lessons.common.result import Shown
from attnlab.train import progress

PARAMS = (
    Param("d_model", "int", 512, 8, 4096, step=8, log=True, help="model width"),
    Param("n_heads", "int", 8, 1, 64, step=1, log=True, help="heads (divides d_model)"),
    Param("n", "int", 128, 1, 65536, step=1, log=True, help="sequence length"),
    Param(
        "train_steps",
        "int",
        100,
        0,
        200,
        step=25,
        help="Adam steps of the 1-, 2- and 4-head XOR models (0: skip training)",
    ),
    Param(
        "seed",
        "int",
        0,
        0,
        2**31 - 1,
        step=1,
        help="first of the ten seeds trained (seed .. seed + 9); its heads are shown",
    ),
)
QUICK = {"d_model": 32, "n_heads": 4, "n": 8, "train_steps": 25}
COURSE = ("lecture06", 60)  # the course map's section (web/course_map.py) and place in it
HEAVY = True


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
    head: int
    weights: list[list[float]]  # (8, 3): for each input sequence, the weights of query 2 on keys 0, 1, 2
    weight_on_ones: float  # mean weight on the keys 0, 1 that hold a 1, over the inputs where x_0 != x_1
    kind: str  # "ones" | "zeros" | "mixed": where the head looks when x_0 and x_1 differ
    kind_label: str = ""  # the kind in the requested language


@dataclass
class HeadsRun:
    n_heads: int
    d_k: int
    accuracies: list[float]  # on the 8 sequences, one per seed (seed, seed + 1, ...)
    correct: list[int]  # sequences right of the 8, one per seed
    solved: int  # seeds that got all 8 right
    best: float


@dataclass
class MultiheadResult(Shown):
    topic: str
    params: dict
    one_head: Variant
    many_heads: Variant
    inputs: list[str]  # the 8 sequences "x0 x1 x2"
    targets: list[int]  # x0 XOR x1
    one_head_bound: float  # 0.75, proved
    hand_built_accuracy: float  # two heads with weights set by hand
    hand_built_heads: list[HeadPattern]
    runs: list[HeadsRun]  # trained: 1, 2 and 4 heads of width WIDTH, N_SEEDS seeds each (empty when train_steps = 0)
    seeds: list[int]
    heads: list[HeadPattern]  # the trained two-head model of the first seed
    one_head_pattern: HeadPattern | None  # the trained one-head model of the first seed
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
        n_heads,
        d_model // n_heads,
        sum(p.numel() for p in layer.parameters()),
        int(counter.get_total_flops()),
        8 * n * d_model**2 + 4 * n**2 * d_model,
        by_op,
        n_heads * n * n,
    )


T_TASK, WIDTH, N_SEEDS, LR = 3, 16, 10, 0.02
TRAINED_HEADS = (1, 2, 4)
MODEL = "heads_{}"  # the training progress's name of the models with h heads (explain.multihead.model.heads_<h>)
INPUTS = torch.cartesian_prod(*[torch.arange(2)] * T_TASK)  # (8, 3): every sequence x_0 x_1 x_2
TARGETS = INPUTS[:, 0] ^ INPUTS[:, 1]  # (8,): y = x_0 XOR x_1, read at position 2
ONE_HEAD_BOUND = 0.75  # proved in the module docstring: at most 6 of the 8
COIN = 0.5 ** len(INPUTS)  # chance that a guess per sequence gets all 8 right: 1/256
# Each claim's strongest null (lessons/common/nulls.py), computed in the same run: the hand-built heads against what
# one head can reach at all (the proved 6 of 8, stronger than any one-head model we could build or train); the
# trained count against a coin per sequence, taken per seed (the seeds are the independent units). That one head
# cannot is the proof checked on every trained one-head model: an identity (none above the bound), no null.
NULLS = {"two_heads_can": Null("one_head"), "trained_counts": CHANCE}


class AttentionOnly(nn.Module):
    """Embedding -> one causal MultiHeadAttention (+ the residual) -> Linear: logits linear in the attention output."""

    def __init__(self, n_heads: int, width: int = WIDTH):
        super().__init__()
        from attnlab.models.embedding import Embedding
        from attnlab.nn import MultiHeadAttention

        self.embed = Embedding(2, T_TASK, width, "learned")
        self.attn = MultiHeadAttention(width, n_heads)
        self.head = nn.Linear(width, 2)

    def forward(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """idx (B, 3) -> (logits at position 2 (B, 2), weights (B, H, 3, 3))."""
        z = self.embed(idx)  # (B, 3, width): token + learned position
        out, w = self.attn(z, causal=True, need_weights=True)
        return self.head(z + out)[:, -1], w


def hand_built() -> AttentionOnly:
    """Two heads that compute XOR: head 0 looks at the 1s among x_0, x_1 (its value: OR), head 1 at the 0s (AND)."""
    m = AttentionOnly(2)
    L = 40.0 * math.sqrt(WIDTH // 2)  # scores of +-40 after the 1/sqrt(d_k): the softmax is all but one-hot
    with torch.no_grad():
        for p in m.parameters():
            p.zero_()
        m.embed.tok.weight[0, 0] = m.embed.tok.weight[1, 1] = 1  # token t -> e_t
        m.embed.pos.weight[[0, 1, 2], [2, 3, 4]] = 1  # position j -> e_{2+j}
        a, q = m.attn, WIDTH // 2  # head 1 uses the dimensions q .. 2q - 1
        for h, token in ((0, 1), (1, 0)):  # head 0 scores the 1s, head 1 the 0s
            a.W_Q.bias[h * q], a.W_Q.bias[h * q + 1] = L, 4 * L  # a constant query
            a.W_K.weight[h * q, token] = 1  # key: "holds `token`"
            a.W_K.weight[h * q + 1, 4] = -1  # and "is position 2" (never attend there)
            a.W_V.weight[h * q, 1] = 1  # value: "holds a 1"
        a.W_O.weight[5, 0], a.W_O.weight[5, q] = 1, -1  # OR - AND into dimension 5
        m.head.weight[1, 5], m.head.bias[1] = 1, -0.5  # logit(1) - logit(0) = OR - AND - 1/2
    return m


def describe(w: torch.Tensor, head: int) -> HeadPattern:
    """Where one head's query 2 looks on the 8 inputs; w (8, 3) its weights on keys 0, 1, 2."""
    differ = (INPUTS[:, 0] != INPUTS[:, 1]).nonzero().flatten()  # the inputs 01x and 10x
    ones = (w[differ, :2] * INPUTS[differ, :2].float()).sum(-1).mean().item()
    zeros = (w[differ, :2] * (1 - INPUTS[differ, :2].float())).sum(-1).mean().item()
    kind = "ones" if ones > 0.9 else "zeros" if zeros > 0.9 else "mixed"
    return HeadPattern(head, w.tolist(), ones, kind)


_here = threading.local()  # (steps already done, steps in all) of the seeds a trained() call trains, for the progress


def _report(n_heads: int, step: int, steps: int) -> None:
    """progress.report across the seeds: the bar of the h-head models runs over every seed's steps."""
    done, total = getattr(_here, "span", None) or (0, steps)
    progress.report(MODEL.format(n_heads), done + step, total)


@lru_cache(maxsize=256)
def train_one(n_heads: int, steps: int, seed: int) -> tuple[float, list[list[list[float]]]]:
    """Train one model with Adam on all 8 sequences (full batch). Cached per seed, so that seeds s .. s + 9 and
    s + 1 .. s + 10 share nine models. Returns (accuracy, the weights of query 2 per head (H, 8, 3))."""
    with seeded(seed):
        model = AttentionOnly(n_heads)
    opt = torch.optim.Adam(model.parameters(), lr=LR, foreach=True)
    # Not train.small: the whole task (all 8 sequences) every step, no batches to draw, no schedule.
    for step in range(steps):
        progress.check()  # stops here when the page that asked has gone
        loss = torch.nn.functional.cross_entropy(model(INPUTS)[0], TARGETS)  # logits (8, 2)
        opt.zero_grad()
        loss.backward()
        opt.step()
        _report(n_heads, step + 1, steps)  # the page shows it while the models train
    with torch.no_grad():
        logits, w = model(INPUTS)  # (8, 2), (8, H, 3, 3)
    return (logits.argmax(-1) == TARGETS).float().mean().item(), w[:, :, -1, :].transpose(0, 1).tolist()


def trained(n_heads: int, steps: int, first_seed: int) -> tuple[list[float], list[list[list[float]]]]:
    """N_SEEDS models, seeds first_seed ...: (accuracy per seed, the first seed's weights of query 2 (H, 8, 3))."""
    runs, total = [], N_SEEDS * steps
    try:
        for k, s in enumerate(range(first_seed, first_seed + N_SEEDS)):
            _here.span = (k * steps, total)
            runs.append(train_one(n_heads, steps, s))
            progress.report(MODEL.format(n_heads), (k + 1) * steps, total)  # a model found in the cache counts too
    finally:
        _here.span = None
    return [acc for acc, _ in runs], runs[0][1]


def cost(p: dict) -> Cost:
    """Counts on fake tensors (nothing allocated) and trains tiny attention-only models (stoppable at every step)."""
    heads_divide(p["d_model"], p["n_heads"])
    return Cost(16.0, trains=p["train_steps"] > 0)


@lesson
def multihead(
    d_model: int = 512, n_heads: int = 8, n: int = 128, train_steps: int = 100, seed: int = 0, *, lang: str = "zh"
) -> MultiheadResult:
    """Count one wide head against h narrow heads, then show what two heads do that one provably cannot."""
    p = check(PARAMS, dict(d_model=d_model, n_heads=n_heads, n=n, train_steps=train_steps, seed=seed))
    d_model, n_heads, n = p["d_model"], p["n_heads"], p["n"]
    cost(p)
    one, many = count(d_model, 1, n), count(d_model, n_heads, n)

    def label(h: HeadPattern) -> HeadPattern:
        return replace(h, kind_label=t(f"explain.plot.mh.kind.{h.kind}", lang))  # the cached patterns stay untouched

    built = hand_built()
    with torch.no_grad():
        logits, w = built(INPUTS)
    built_acc = (logits.argmax(-1) == TARGETS).float().mean().item()
    built_heads = [label(describe(w[:, h, -1, :], h)) for h in range(2)]

    runs, heads, one_pattern = [], [], None
    seeds = list(range(p["seed"], p["seed"] + N_SEEDS))
    if p["train_steps"]:
        for h in TRAINED_HEADS:
            progress.report(MODEL.format(h), 0, N_SEEDS * p["train_steps"])  # every model listed from the start
        for h in TRAINED_HEADS:
            acc, weights = trained(h, p["train_steps"], p["seed"])
            runs.append(
                HeadsRun(
                    h, WIDTH // h, acc, [round(a * len(INPUTS)) for a in acc], sum(a == 1.0 for a in acc), max(acc)
                )
            )
            if h == 2:
                heads = [label(describe(torch.tensor(weights[k]), k)) for k in range(h)]
            if h == 1:
                one_pattern = label(describe(torch.tensor(weights[0]), 0))

    claims = claims_of(one, many, built_acc, runs, seeds, p["train_steps"], n_heads, lang)
    inputs = [" ".join(str(v) for v in row) for row in INPUTS.tolist()]
    return MultiheadResult(
        "multihead",
        p,
        one,
        many,
        inputs,
        TARGETS.tolist(),
        ONE_HEAD_BOUND,
        built_acc,
        built_heads,
        runs,
        seeds,
        heads,
        one_pattern,
        claims,
    )


def claims_of(
    one: Variant,
    many: Variant,
    built_acc: float,
    runs: list[HeadsRun],
    seeds: list[int],
    steps: int,
    n_heads: int,
    lang: str,
) -> list[Claim]:
    """The costs are identities (counted on the module, against each other and the closed form); the hand-built
    heads lead the proved one-head bound (6 of 8), which every trained one-head model must keep (an identity: a
    model past it would contradict the proof), and the trained count is against a coin per sequence, per seed."""

    def c(name: str, **fields) -> str:
        return t(f"explain.multihead.control.{name}", lang, **fields)

    claims = [
        within(
            "params_equal",
            t("explain.multihead.claim.params", lang, one=one.params, many=many.params, h=n_heads),
            lang,
            measured=many.params,
            expected=one.params,
            tol=0,
            control=c("one_head_params"),
            values={"one_head": one.params, "many_heads": many.params, "n_heads": n_heads},
        ),
        within(
            "flops_equal",
            t("explain.multihead.claim.flops", lang, one=one.flops, many=many.flops, h=n_heads),
            lang,
            measured=many.flops,
            expected=one.flops,
            tol=0,
            control=c("one_head_flops"),
            values={"one_head": one.flops, "many_heads": many.flops, "n_heads": n_heads},
        ),
        within(
            "flops_analytic",
            t("explain.multihead.claim.analytic", lang, counted=many.flops, formula=many.flops_analytic),
            lang,
            measured=many.flops,
            expected=many.flops_analytic,
            tol=0,
            control=c("formula"),
            values={"counted": many.flops, "formula": many.flops_analytic},
        ),
        # all 8 right is the bound's 6 of 8 plus two sequences: a lead of 2/8 over what one head can reach
        lead(
            "two_heads_can",
            t("explain.multihead.claim.hand_built", lang, acc=built_acc, bound=ONE_HEAD_BOUND),
            lang,
            measured=built_acc,
            baseline=ONE_HEAD_BOUND,
            margin=1 - ONE_HEAD_BOUND,
            control=c("one_head_bound"),
            values={"accuracy": built_acc, "one_head_bound": ONE_HEAD_BOUND},
        ),
    ]
    if runs:
        by = {r.n_heads: r for r in runs}
        over = sum(a > ONE_HEAD_BOUND for a in by[1].accuracies)  # one-head models past the proved 6 of 8
        claims.append(
            within(
                "one_head_cannot",
                t(
                    "explain.multihead.claim.one_head",
                    lang,
                    best=by[1].best,
                    bound=ONE_HEAD_BOUND,
                    n=N_SEEDS,
                    steps=steps,
                    over=over,
                ),
                lang,
                measured=over,
                expected=0,
                tol=0,
                control=c("over_bound"),
                values={"best": by[1].best, "bound": ONE_HEAD_BOUND, "over": over, "accuracies": by[1].accuracies},
            )
        )
        claims.append(
            beats_chance(
                "trained_counts",
                t(
                    "explain.multihead.claim.counts",
                    lang,
                    n=N_SEEDS,
                    s0=seeds[0],
                    s1=seeds[-1],
                    steps=steps,
                    k1=by[1].solved,
                    k2=by[2].solved,
                    k4=by[4].solved,
                    w=WIDTH,
                    need=chance_count(N_SEEDS, COIN),
                ),
                lang,
                k=by[2].solved,
                n=N_SEEDS,
                p=COIN,
                control=c("coin"),
                values={"solved_1": by[1].solved, "solved_2": by[2].solved, "solved_4": by[4].solved},
                hint=t("explain.multihead.hint.counts", lang),
            )
        )
    return claims

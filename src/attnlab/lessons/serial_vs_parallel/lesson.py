"""n tokens through an RNN (n dependent steps) against one self-attention layer (a few batched matmuls).

For n = 16 .. n_max the lesson times both on this machine, counts the operations each issues (a
TorchDispatchMode sees every aten op: the RNN's count grows with n, attention's does not) and records which
operation read which one's result (graph.py). From that recorded graph come the dependent steps (the longest
chain of per-position outputs each waiting for another: the RNN's h_1 -> h_2 -> ... -> h_n, attention's one
output) and the shortest path from position 1 to position n (RNN: the edges h_i -> h_j the graph holds;
attention: an edge j -> i wherever the computed weight a_ij > 0). Timings are
measurements of this machine at this moment, on one CPU thread, not promises: on one thread the n^2 work
of attention can well take longer than the RNN's n small steps; what does not depend on the machine is the
number of steps that must wait for each other.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead, within
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import (
    MEMORY_LIMIT,
    Param,
    check,
    heads_divide,
    largest_square,
    lesson,
    memory_guard,
    one_thread,
    seeded,
)
from attnlab.lessons.common.result import Shown
from attnlab.lessons.serial_vs_parallel.graph import OpTrace, dependencies, shortest_path

N_MAX = 2048  # reachable with the default heads: the (H, n, n) weights, 3 copies in float32, within 512 MiB
BYTES_PER_N2 = 3 * 4  # per head: scores, softmax and a copy, float32
N2_BYTES, ND_BYTES, D2_BYTES = 15, 48, 40  # the measured peak per h·n², n·d and d² (tests/cost_peaks.py)
FULL_HEADS = max(h for h in range(1, 17) if largest_square(BYTES_PER_N2 * h) >= N_MAX)  # 10

PARAMS = (
    Param(
        "n_max",
        "int",
        1024,
        16,
        N_MAX,
        step=16,
        log=True,
        help=f"largest sequence length n (memory: with more than {FULL_HEADS} heads the limit is lower)",
    ),
    Param("d_model", "int", 64, 8, 512, step=8, log=True, help="width of the hidden state and of the tokens"),
    Param("n_heads", "int", 4, 1, 16, step=1, help="attention heads (divides d_model)"),
    Param("repeats", "int", 3, 1, 20, step=1, help="timing runs per point (the fastest is kept)"),
    Param("seed", "int", 0, 0, 2**31 - 1, step=1, help="random seed"),
)
QUICK = {"n_max": 32, "d_model": 8, "n_heads": 2, "repeats": 1}
# The strongest null of "the RNN's work grows with n" (lessons/common/nulls.py): one attention layer over the same
# n's, all positions at once, counted in the same run; the RNN must add operations that attention does not. The
# other claims are identities (counts that must agree exactly).
NULLS = {"rnn_steps": Null("attention")}
COURSE = ("lecture06", 30)  # the course map's section (web/course_map.py) and place in it
HEAVY = True


@dataclass
class Point:
    n: int
    rnn_seconds: float  # measured, best of `repeats`
    attention_seconds: float
    rnn_ops: int  # aten ops issued, each after the previous one
    attention_ops: int
    rnn_steps: int  # the longest chain of outputs each waiting for another, in the recorded graph: n
    attention_steps: int  # the same for attention: 1 (all positions at once)
    rnn_path: int  # shortest path from position 1 to position n in the recorded dependency graph
    attention_path: int


@dataclass
class SerialVsParallelResult(Shown):
    topic: str
    params: dict
    points: list[Point]
    claims: list[Claim]


def best_time(fn, repeats: int) -> float:
    """The fastest of `repeats` runs, on one thread, after one warm-up run (first calls allocate)."""
    with one_thread():
        fn()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return min(times)


def cost(p: dict) -> Cost:
    """Refused before timing when d_model does not split into heads or the (H, n, n) weights would not fit;
    else those weights and the inputs."""
    n_max, d, h = p["n_max"], p["d_model"], p["n_heads"]
    heads_divide(d, h)
    need = BYTES_PER_N2 * h * n_max * n_max
    memory_guard(
        need,
        f"the attention weights for n_max={n_max} with {h} heads (scores, softmax, copy)",
        MEMORY_LIMIT,
        "n_max",
        n_max,
        largest_square(BYTES_PER_N2 * h),
    )
    # measured on this lesson (tests/cost_peaks.py), erring high: the weights' n² terms and the work around them,
    # the RNN's and the attention's activations for n_max positions, their d² weights, and the graph recorded
    return Cost.of_bytes(N2_BYTES * h * n_max * n_max + ND_BYTES * n_max * d + D2_BYTES * d * d, extra_mb=10.0)


@lesson
def serial_vs_parallel(
    n_max: int = 1024, d_model: int = 64, n_heads: int = 4, repeats: int = 3, seed: int = 0, *, lang: str = "zh"
) -> SerialVsParallelResult:
    """Time, dependent steps and path length of an RNN against self-attention for n = 16 .. n_max."""
    p = check(PARAMS, dict(n_max=n_max, d_model=d_model, n_heads=n_heads, repeats=repeats, seed=seed))
    n_max, d, h = p["n_max"], p["d_model"], p["n_heads"]
    cost(p)

    from attnlab.nn import MultiHeadAttention
    from attnlab.nn.recurrent import RNN

    with seeded(p["seed"]):
        rnn, attn = RNN(d, d).eval(), MultiHeadAttention(d, h).eval()
    sizes, n = [], min(16, n_max // 2)  # at least two sizes, so that "grows with n" is something measured
    while n <= n_max:
        sizes.append(n)
        n *= 2
    if sizes[-1] != n_max:
        sizes.append(n_max)

    points = []
    with torch.no_grad():
        for n in sizes:
            x = torch.randn(1, n, d, generator=torch.Generator().manual_seed(p["seed"] + n))  # (1, n, d)
            with OpTrace() as rnn_trace:
                _, states = rnn(x)
            with OpTrace() as attn_trace:
                out, weights = attn(x, need_weights=True)  # (1, n, d), (1, H, n, n)
            rnn_chain, rnn_edges = dependencies(rnn_trace, states[1:])  # h_1 .. h_n, as the graph links them
            attn_chain, _ = dependencies(attn_trace, [out])  # every position's output in one tensor
            reads = (weights[0] > 0).any(0)  # (n, n): query i read key j in some head
            attn_edges = {0: reads[:, 0].nonzero().flatten().tolist()}  # position 1 feeds every query that read it
            points.append(
                Point(
                    n,
                    best_time(lambda: rnn(x), p["repeats"]),
                    best_time(lambda: attn(x, need_weights=True), p["repeats"]),
                    rnn_trace.count,
                    attn_trace.count,
                    rnn_chain,
                    attn_chain,
                    shortest_path(rnn_edges, 0, n - 1),
                    shortest_path(attn_edges, 0, n - 1),
                )
            )
    first, last = points[0], points[-1]
    grow = last.n - first.n  # each added position is one more step: at least one more operation
    rnn_more, attn_more = last.rnn_ops - first.rnn_ops, last.attention_ops - first.attention_ops
    # steps off the closed forms: n and 1 dependent steps, paths of n - 1 and 1
    path_off = (
        abs(last.rnn_steps - last.n)
        + abs(last.attention_steps - 1)
        + abs(last.rnn_path - (last.n - 1))
        + abs(last.attention_path - 1)
    )

    def c(name: str) -> str:
        return t(f"explain.serial.control.{name}", lang, n0=first.n, n=last.n)

    claims = [
        # Counted, not timed: over the same n's, the RNN's chain must gain at least one operation per added
        # position more than the attention layer, which handles every position at once, gains.
        lead(
            "rnn_steps",
            t(
                "explain.serial.claim.rnn_ops",
                lang,
                n0=first.n,
                o0=first.rnn_ops,
                n1=last.n,
                o1=last.rnn_ops,
                more=rnn_more,
                attn=attn_more,
                margin=grow,
            ),
            lang,
            measured=rnn_more,
            baseline=attn_more,
            margin=grow,
            control=c("attn_more"),
            values={
                "n0": first.n,
                "ops_n0": first.rnn_ops,
                "n1": last.n,
                "ops_n1": last.rnn_ops,
                "attention_more": attn_more,
                "steps_n1": last.rnn_steps,
            },
        ),
        within(
            "attention_ops",
            t(
                "explain.serial.claim.attn_ops",
                lang,
                n0=first.n,
                o0=first.attention_ops,
                n1=last.n,
                o1=last.attention_ops,
            ),
            lang,
            measured=last.attention_ops,
            expected=first.attention_ops,
            tol=0,
            control=c("attn_first"),
            values={"n0": first.n, "ops_n0": first.attention_ops, "n1": last.n, "ops_n1": last.attention_ops},
        ),
        within(
            "path",
            t(
                "explain.serial.claim.path",
                lang,
                n=last.n,
                rnn_steps=last.rnn_steps,
                attn_steps=last.attention_steps,
                rnn=last.rnn_path,
                attn=last.attention_path,
            ),
            lang,
            measured=path_off,
            expected=0,
            tol=0,
            control=c("path"),
            values={
                "n": last.n,
                "rnn_steps": last.rnn_steps,
                "attention_steps": last.attention_steps,
                "rnn_path": last.rnn_path,
                "attention_path": last.attention_path,
                "steps_off": path_off,
            },
        ),
    ]
    return SerialVsParallelResult("serial-vs-parallel", p, points, claims)

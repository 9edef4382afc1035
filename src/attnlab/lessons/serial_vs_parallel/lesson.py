"""n tokens through an RNN (n dependent steps) against one self-attention layer (a few batched matmuls).

For n = 16 .. n_max the lesson times both on this machine, counts the operations each issues one after
another (a TorchDispatchMode sees every aten op: the RNN's count grows with n, attention's does not), and
finds the shortest path from position 1 to position n in each one's dependency graph (RNN: the chain
h_1 -> h_2 -> ... -> h_n; attention: an edge j -> i wherever the computed weight a_ij > 0). Timings are
measurements of this machine at this moment, on one CPU thread, not promises: on one thread the n^2 work
of attention can well take longer than the RNN's n small steps; what does not depend on the machine is the
number of steps that must wait for each other.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead, within
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.params import (
    MEMORY_LIMIT,
    Param,
    ParamError,
    check,
    largest_square,
    lesson,
    memory_guard,
    one_thread,
    seeded,
)
from attnlab.lessons.common.result import Shown

N_MAX = 2048  # reachable with the default heads: the (H, n, n) weights, 3 copies in float32, within 512 MiB
BYTES_PER_N2 = 3 * 4  # per head: scores, softmax and a copy, float32
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
COURSE = ("lecture06", 30)  # the course map's section (web/course_map.py) and place in it
HEAVY = True


@dataclass
class Point:
    n: int
    rnn_seconds: float  # measured, best of `repeats`
    attention_seconds: float
    rnn_ops: int  # aten ops issued, each after the previous one
    attention_ops: int
    rnn_steps: int  # dependent time steps: n
    attention_steps: int  # dependent stages over positions: 1 (all positions at once)
    rnn_path: int  # shortest path from position 1 to position n in the dependency graph
    attention_path: int


@dataclass
class SerialVsParallelResult(Shown):
    topic: str
    params: dict
    points: list[Point]
    claims: list[Claim]


class OpCounter(TorchDispatchMode):
    """Counts every aten operation that runs inside it."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def shortest_path(edges: dict[int, list[int]], start: int, goal: int) -> int:
    """Breadth-first search: the fewest edges from start to goal (-1 if unreachable)."""
    seen, queue = {start: 0}, deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            return seen[node]
        for nxt in edges.get(node, ()):
            if nxt not in seen:
                seen[nxt] = seen[node] + 1
                queue.append(nxt)
    return -1


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
    if d % h:
        raise ParamError(
            f"d_model must be divisible by n_heads, got d_model={d}, n_heads={h}",
            "n_heads",
            "explain.error.divisible",
            width="d_model",
            d=d,
            h=h,
        )
    need = BYTES_PER_N2 * h * n_max * n_max
    memory_guard(
        need,
        f"the attention weights for n_max={n_max} with {h} heads (scores, softmax, copy)",
        MEMORY_LIMIT,
        "n_max",
        n_max,
        largest_square(BYTES_PER_N2 * h),
    )
    return Cost.of_bytes(need + 8 * 4 * n_max * d)


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
            with OpCounter() as rnn_counter:
                _, states = rnn(x)
            with OpCounter() as attn_counter:
                _, weights = attn(x, need_weights=True)  # (1, H, n, n)
            rnn_edges = {i: [i + 1] for i in range(n - 1)}  # h_i feeds h_{i+1}, nothing else: the loop
            reads = (weights[0] > 0).any(0)  # (n, n): query i read key j in some head
            attn_edges = {0: reads[:, 0].nonzero().flatten().tolist()}  # position 1 feeds every query that read it
            points.append(
                Point(
                    n,
                    best_time(lambda: rnn(x), p["repeats"]),
                    best_time(lambda: attn(x, need_weights=True), p["repeats"]),
                    rnn_counter.count,
                    attn_counter.count,
                    len(states) - 1,
                    1,
                    shortest_path(rnn_edges, 0, n - 1),
                    shortest_path(attn_edges, 0, n - 1),
                )
            )
    first, last = points[0], points[-1]
    grow = last.n - first.n  # each added position is one more step: at least one more operation
    path_off = abs(last.rnn_path - (last.n - 1)) + abs(last.attention_path - 1)  # steps off the closed forms

    def c(name: str) -> str:
        return t(f"explain.serial.control.{name}", lang, n0=first.n, n=last.n)

    claims = [
        # Counted, not timed: the RNN's chain must gain at least one operation per added position.
        lead(
            "rnn_steps",
            t(
                "explain.serial.claim.rnn_ops",
                lang,
                n0=first.n,
                o0=first.rnn_ops,
                n1=last.n,
                o1=last.rnn_ops,
                margin=grow,
            ),
            lang,
            measured=last.rnn_ops,
            baseline=first.rnn_ops,
            margin=grow,
            control=c("rnn_first"),
            values={
                "n0": first.n,
                "ops_n0": first.rnn_ops,
                "n1": last.n,
                "ops_n1": last.rnn_ops,
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
            t("explain.serial.claim.path", lang, n=last.n, rnn=last.rnn_path, attn=last.attention_path),
            lang,
            measured=path_off,
            expected=0,
            tol=0,
            control=c("path"),
            values={
                "n": last.n,
                "rnn_path": last.rnn_path,
                "attention_path": last.attention_path,
                "steps_off": path_off,
            },
        ),
    ]
    return SerialVsParallelResult("serial-vs-parallel", p, points, claims)

"""The cost ledger of one Transformer block: O(n^2 d) for attention's scores, O(n d^2) for everything else.

FLOPs (one multiply-add = 2 FLOPs, batch 1, n tokens, width d, FFN hidden width d_ff):
  Q, K, V projections   3 * 2 n d^2         output projection  2 n d^2
  scores Q K^T          2 n^2 d             weighted sum A V    2 n^2 d
  FFN                   2 * 2 n d d_ff
The analytic numbers are checked against torch's FlopCounterMode run on our own Block (on meta tensors:
shapes only, so any n). The n^2 d terms overtake the n d^2 terms at n = 2 d + d_ff for the whole block
(n = 2 d inside the attention layer alone). Then the block is timed on this machine for growing n, and the
slope of log(time) against log(n) says which term dominates at those sizes (1: linear, 2: quadratic).
Beside the block: the RNN layer's row, 4 n d^2 FLOPs in n serial steps (equal to attention's n^2 d part at
n = d), and the FFN's share of a block's parameters (cost_rows.py beside it).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np
import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, within
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
from attnlab.lessons.complexity.cost_rows import ParamShare, RNNRow, param_share, rnn_row

TIME_N_MAX = 2048  # reachable with the default 8 heads: the (H, n, n) weights, 3 copies in float32, within 512 MiB
BYTES_PER_N2 = 3 * 4  # per head: scores, softmax and a copy, float32
PARAM_BYTES, ACT_BYTES = 8, 6  # the timed block's peak per weight and per activation (tests/cost_peaks.py)
FULL_HEADS = max(h for h in range(1, 129) if largest_square(BYTES_PER_N2 * h) >= TIME_N_MAX)  # 10

PARAMS = (
    Param("n", "int", 1024, 1, 1_048_576, step=1, log=True, help="sequence length n"),
    Param("d_model", "int", 512, 8, 16384, step=8, log=True, help="model width d"),
    Param("n_heads", "int", 8, 1, 128, step=1, log=True, help="attention heads (divides d_model)"),
    Param("ff_mult", "int", 4, 1, 8, step=1, help="FFN hidden width d_ff = ff_mult * d_model"),
    Param(
        "time_n_max",
        "int",
        1024,
        64,
        TIME_N_MAX,
        step=64,
        log=True,
        help=f"largest n of the measured time curve (memory: with more than {FULL_HEADS} heads the limit is lower)",
    ),
    Param("time_d_model", "int", 128, 8, 1024, step=8, log=True, help="width used for the measured time curve"),
    Param("repeats", "int", 3, 1, 20, step=1, help="timing runs per point (the fastest is kept)"),
)
QUICK = {"n": 64, "d_model": 32, "n_heads": 4, "time_n_max": 64, "time_d_model": 16, "repeats": 1}
COURSE = ("chapter01", 50)  # the course map's section (web/course_map.py) and place in it
HEAVY = True


@dataclass
class Term:
    name: str  # qkv_projections | output_projection | scores | weighted_sum | ffn
    order: str  # "n d^2" or "n^2 d"
    flops: int  # analytic
    label: str = ""  # the name in the requested language


@dataclass
class CounterCheck:
    part: str  # the part of our Block the counter was read on
    analytic: int
    counted: int
    label: str = ""


@dataclass
class TimePoint:
    n: int
    seconds: float  # measured, best of repeats


@dataclass
class ComplexityResult(Shown):
    topic: str
    params: dict
    terms: list[Term]
    total_flops: int
    quadratic_share: float  # share of the FLOPs in the n^2 d terms
    checks: list[CounterCheck]
    crossover_block: int  # n where 4 n^2 d = 8 n d^2 + 4 n d d_ff
    crossover_attention: int  # n where 4 n^2 d = 8 n d^2 (attention layer alone)
    weights_bytes: int  # the n x n attention weights of every head, float32
    weights_bytes_one_head: int
    time_points: list[TimePoint]
    time_slope: float  # least-squares slope of log(seconds) against log(n), upper half of the points
    time_weights_bytes: int  # bytes of the (1, H, n, n) weights tensor our Block made at n = time_n_max
    rnn: RNNRow  # the RNN layer's O(n d^2) beside the attention layer's O(n^2 d + n d^2)
    params_share: ParamShare  # the FFN's share of one block's parameters, counted on a real Block
    claims: list[Claim]


def analytic_terms(n: int, d: int, d_ff: int) -> list[Term]:
    return [
        Term("qkv_projections", "n d^2", 3 * 2 * n * d * d),
        Term("output_projection", "n d^2", 2 * n * d * d),
        Term("scores", "n^2 d", 2 * n * n * d),
        Term("weighted_sum", "n^2 d", 2 * n * n * d),
        Term("ffn", "n d d_ff", 2 * 2 * n * d * d_ff),
    ]


def counted(n: int, d: int, h: int, d_ff: int) -> dict[str, int]:
    """FlopCounterMode on our Block (explicit attention path) and on its parts. Each part is counted on its own
    and read as a total, or by op name (attention's bmm), never by FlopCounterMode's module attribution: that
    uses process-wide module hooks, which another thread's forward pass (the web app's figure, a training run)
    would mix in."""
    from attnlab.lessons.complexity.flops import flop_counter
    from attnlab.nn import Block

    with torch.device("meta"):
        block = Block(d, h, d_ff)
        x = torch.empty(1, n, d)

    def total(run) -> tuple[int, dict]:
        with flop_counter() as counter:
            run()
        return int(counter.get_total_flops()), counter.get_flop_counts().get("Global", {})

    whole, ops = total(lambda: block(x, record=lambda name, tensor: None))  # recording: the explicit path
    return {
        "qkv_projections": sum(total(lambda m=m: getattr(block.attn, f"W_{m}")(x))[0] for m in "QKV"),
        "output_projection": total(lambda: block.attn.W_O(x))[0],
        "scores+weighted_sum": int(sum(v for k, v in ops.items() if str(k).endswith("bmm"))),  # Q K^T and A V
        "ffn": total(lambda: block.ffn(x))[0],
        "block": whole,
    }


def time_curve(n_max: int, d: int, h: int, d_ff: int, repeats: int) -> tuple[list[TimePoint], int]:
    """Best-of-repeats seconds of our Block for n = 64, 128, .. n_max, and the bytes of the weights tensor
    it made at the largest n."""
    from attnlab.nn import Block

    with seeded(0):
        block = Block(d, h, d_ff).eval()
    seen: dict[str, torch.Tensor] = {}
    points, n = [], 64
    with torch.no_grad(), one_thread():
        while n <= n_max:
            x = torch.randn(1, n, d)
            block(x)  # warm-up
            best = math.inf
            for _ in range(repeats):
                start = time.perf_counter()
                block(x, record=seen.__setitem__)  # the explicit path, the one the FLOPs count
                best = min(best, time.perf_counter() - start)
            points.append(TimePoint(n, best))
            n *= 2
    weights = seen["attn.weights"]  # (1, H, n, n) at the largest n
    return points, weights.numel() * weights.element_size()


def loglog_slope(points: list[TimePoint]) -> float:
    upper = points[len(points) // 2 :] if len(points) >= 4 else points
    if len(upper) < 2:
        return float("nan")
    slope, _ = np.polyfit(np.log([p.n for p in upper]), np.log([p.seconds for p in upper]), 1)
    return float(slope)


def cost(p: dict) -> Cost:
    """Refused before timing when widths do not split into heads or the timed (H, n, n) weights would not fit;
    else those weights and the timed block (the counts run on fake tensors: nothing allocated)."""
    h = p["n_heads"]
    for width in ("d_model", "time_d_model"):
        if p[width] % h:
            raise ParamError(
                f"{width} must be divisible by n_heads, got {width}={p[width]}, n_heads={h}",
                "n_heads",
                "explain.error.divisible",
                width=width,
                d=p[width],
                h=h,
            )
    need = BYTES_PER_N2 * h * p["time_n_max"] ** 2
    memory_guard(
        need,
        f"timing attention at n={p['time_n_max']} with {h} heads",
        MEMORY_LIMIT,
        "time_n_max",
        p["time_n_max"],
        largest_square(BYTES_PER_N2 * h),
    )
    n, d, ff = p["time_n_max"], p["time_d_model"], p["ff_mult"]
    # beside the (H, n, n) weights, the timed block's own: its (4 + 2·ff_mult)·d² weights as they are made, and the
    # activations of a forward pass, n·d·(2 + ff_mult) (bytes per number measured on this lesson, erring high)
    return Cost.of_bytes(need + PARAM_BYTES * (4 + 2 * ff) * d * d + ACT_BYTES * n * d * (2 + ff))


@lesson
def complexity(
    n: int = 1024,
    d_model: int = 512,
    n_heads: int = 8,
    ff_mult: int = 4,
    time_n_max: int = 1024,
    time_d_model: int = 128,
    repeats: int = 3,
    *,
    lang: str = "zh",
) -> ComplexityResult:
    """FLOPs per term (analytic and counted), the crossover n, the n x n memory, and a measured time curve."""
    p = check(
        PARAMS,
        dict(
            n=n,
            d_model=d_model,
            n_heads=n_heads,
            ff_mult=ff_mult,
            time_n_max=time_n_max,
            time_d_model=time_d_model,
            repeats=repeats,
        ),
    )
    n, d, h = p["n"], p["d_model"], p["n_heads"]
    cost(p)
    d_ff = p["ff_mult"] * d

    terms = [replace(term, label=t(f"explain.plot.cx.{term.name}", lang)) for term in analytic_terms(n, d, d_ff)]
    total = sum(term.flops for term in terms)
    quadratic = sum(term.flops for term in terms if term.order == "n^2 d")
    by = {term.name: term.flops for term in terms}
    c = counted(n, d, h, d_ff)
    checks = [
        CounterCheck("qkv_projections", by["qkv_projections"], c["qkv_projections"]),
        CounterCheck("output_projection", by["output_projection"], c["output_projection"]),
        CounterCheck("scores+weighted_sum", by["scores"] + by["weighted_sum"], c["scores+weighted_sum"]),
        CounterCheck("ffn", by["ffn"], c["ffn"]),
        CounterCheck("block", total, c["block"]),
    ]
    checks = [replace(ch, label=t(f"explain.plot.cx.{ch.part}", lang)) for ch in checks]
    time_points, measured_bytes = time_curve(
        p["time_n_max"], p["time_d_model"], h, p["ff_mult"] * p["time_d_model"], p["repeats"]
    )
    at_cross = counted(2 * d + d_ff, d, h, d_ff)  # the counter at the crossover n: both parts should be equal
    slope = loglog_slope(time_points)
    cross_block, cross_attn = 2 * d + d_ff, 2 * d
    worst = max(abs(ch.analytic - ch.counted) for ch in checks)  # FLOPs off the formula, in the worst part
    weights_bytes = h * n * n * 4
    rnn = rnn_row(n, d, h, lambda n_at: counted(n_at, d, h, d_ff)["scores+weighted_sum"])
    share = param_share(d, h, d_ff)
    params_off = (
        abs(share.total - share.formula_total)
        + abs(share.weights_ffn - 2 * d * d_ff)
        + abs(share.weights_attention - 4 * d * d)
    )  # parameters off the formulas
    quad, lin = at_cross["scores+weighted_sum"], at_cross["block"] - at_cross["scores+weighted_sum"]
    formula_bytes = 4 * h * p["time_n_max"] ** 2

    def ctl(name: str) -> str:
        return t(f"explain.complexity.control.{name}", lang)

    # Every claim here is an identity: a closed form against torch's own counter, tensor or parameters, exact to
    # the FLOP, byte and parameter, so the tolerance is 0 and a miss of one contradicts it. The measured time
    # curve is shown as a measurement, not judged as a claim.
    claims = [
        within(
            "flops_match",
            t("explain.complexity.claim.flops", lang, total=total, counted=c["block"]),
            lang,
            measured=worst,
            expected=0,
            tol=0,
            control=ctl("counter"),
            values={"formula": total, "counted": c["block"], "worst_part_off": worst},
        ),
        within(
            "crossover",
            t("explain.complexity.claim.crossover", lang, block=cross_block, attn=cross_attn, quad=quad, lin=lin),
            lang,
            measured=quad,
            expected=lin,
            tol=0,
            control=ctl("crossover"),
            values={"n": cross_block, "n2d_counted": quad, "nd2_counted": lin, "n_attention": cross_attn},
        ),
        within(
            "memory",
            t(
                "explain.complexity.claim.memory",
                lang,
                n=p["time_n_max"],
                h=h,
                measured=measured_bytes,
                formula=formula_bytes,
            ),
            lang,
            measured=measured_bytes,
            expected=formula_bytes,
            tol=0,
            control=ctl("memory"),
            values={"n": p["time_n_max"], "heads": h, "bytes": measured_bytes, "formula": formula_bytes},
        ),
        within(
            "rnn_row",
            t(
                "explain.complexity.claim.rnn_row",
                lang,
                step=rnn.rnn_step_counted,
                n=n,
                d=d,
                rnn=rnn.rnn_flops,
                attn=rnn.attention_flops,
                ratio=rnn.attention_flops / rnn.rnn_flops,
            ),
            lang,
            measured=rnn.rnn_step_counted,
            expected=4 * d * d,
            tol=0,
            control=ctl("rnn_step"),
            values={
                "step_counted": rnn.rnn_step_counted,
                "rnn_flops": rnn.rnn_flops,
                "attention_flops": rnn.attention_flops,
            },
        ),
        within(
            "rnn_crossover",
            t(
                "explain.complexity.claim.rnn_crossover",
                lang,
                d=d,
                quad=rnn.crossover_attention_counted,
                rnn=rnn.crossover_rnn,
            ),
            lang,
            measured=rnn.crossover_attention_counted,
            expected=rnn.crossover_rnn,
            tol=0,
            control=ctl("rnn_crossover"),
            values={"n": d, "n2d_counted": rnn.crossover_attention_counted, "rnn_flops": rnn.crossover_rnn},
        ),
        within(
            "ffn_share",
            t(
                "explain.complexity.claim.ffn_share",
                lang,
                share=share.ffn_share,
                wshare=share.weights_share,
                attn=share.attention,
                ffn=share.ffn,
                norms=share.norms,
                total=share.total,
                formula=share.formula_total,
                mult=p["ff_mult"],
            ),
            lang,
            measured=params_off,
            expected=0,
            tol=0,
            control=ctl("params"),
            values={
                "share": share.ffn_share,
                "weights_share": share.weights_share,
                "total": share.total,
                "formula": share.formula_total,
                "params_off": params_off,
            },
        ),
    ]
    return ComplexityResult(
        "complexity",
        p,
        terms,
        total,
        quadratic / total,
        checks,
        cross_block,
        cross_attn,
        weights_bytes,
        n * n * 4,
        time_points,
        slope,
        measured_bytes,
        rnn,
        share,
        claims,
    )

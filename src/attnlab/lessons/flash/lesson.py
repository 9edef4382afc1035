"""FlashAttention written out: the online softmax by hand, its memory measured, its reads and writes counted,
and two sparse masks that skip tiles.

1. By hand: one query (d_k = 2, small integers from `seed`) against n keys, cut into tiles of `tile` keys. The
   table follows nn/flash.py's loop: each tile's scores, the running max m, the factor exp(m_old - m_new) that
   rescales what was summed before, the running sum l and the output so far. The last row must equal
   softmax(q K^T / sqrt(2)) V from attention() to within 1e-6.
2. Memory: one head of width d_k at n = n_max/4, n_max/2, n_max; the peak bytes of attention() and of
   flash_attention(tile=block), read by measure.PeakBytes (a TorchDispatchMode; exact and the same on every
   run). How each grows is read from the increments (measure.growth_order): 2 for the (n, n) matrices, 1 for
   the tiled loop, whose tile blocks are a constant that cancels. Null: a "tiled" loop whose one tile is n.
3. Slow-memory traffic by formula (Dao et al. 2022, elements of HBM read or written, M = on-chip SRAM):
   standard attention (their Algorithm 0) 4 n d + 4 n^2: Q, K read, S written and read, P written and read, V
   read, O written; FlashAttention (Algorithm 1) with B_c = ceil(M / 4d), T_c = ceil(n / B_c): 3 n d + 2 n
   (O, l, m initialised; K, V read once) + T_c (3 n d + 4 n) (Q_i, O_i, l_i, m_i read and O_i, l_i, m_i
   written for each K/V tile): Theta(n^2 d^2 / M). Beside them, our explicit attention, our tiled loop and
   torch's fused SDPA are timed at n_max: clock readings, shown and never judged.
4. Masks at n_max with tiles of `block`: causal, a sliding window of `window` and block-sparse (local block +
   the first block; nn/masks.py). The score entries the loop computes (tiles it does not skip) are counted and
   must equal each mask's closed form; what each cannot see: after L layers the sliding window reaches
   L (window - 1) positions back, and the block-sparse layout never reaches blocks 1 .. I-1 at any depth.

What is claimed of these numbers, and to what tolerance: attnlab.lessons.flash.claims.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, ParamError, check, lesson
from attnlab.lessons.common.result import Matrix, Shown, Vector, tolist
from attnlab.lessons.flash.claims import make_claims
from attnlab.lessons.flash.measure import (
    MemoryPoint,
    Timing,
    growth_order,
    loglog_slope,
    memory_point,
    reached,
    timings,
)
from attnlab.nn import attention, block_sparse_mask, causal_mask, sliding_window_mask
from attnlab.nn.flash import computed_scores, flash_steps

N_MAX = (512, 1024, 2048, 4096)
TILES_PER_SIDE = (4, 32)  # n_max / block: at least 4 (the smallest n holds a whole tile), at most 32 (seconds)
LOCAL, SINKS = 1, 1  # the block-sparse layout: a query's own block and the first block
HAND_D = 2  # the hand example's width: a dot product of two numbers
SRAM_BYTES_PER_ELEMENT = 2  # fp16 on the GPU
# The strongest null of "FlashAttention moves fewer elements" (lessons/common/nulls.py): the same attention at the
# same n, d and SRAM without the tiling, standard attention's traffic, computed in the same run as its control.
# The other claims are identities (to rounding, to a growth order, or to the formula).
NULLS = {"io_fewer": Null("standard")}

PARAMS = (
    Param("n", "int", 8, 2, 32, step=1, help="keys in the hand example"),
    Param("tile", "int", 2, 1, 32, step=1, help="keys per tile in the hand example"),
    Param("seed", "int", 3, 0, 10_000, step=1, help="random seed of the hand example's integers"),
    Param("d_k", "int", 64, 8, 128, step=8, log=True, help="head width for the memory, traffic and timing"),
    Param("block", "int", 64, 16, 256, step=1, log=True, help="tile size at large n, and the block-sparse block"),
    Param("n_max", "choice", 1024, choices=N_MAX, help="largest n measured (memory at n_max/4, n_max/2, n_max)"),
    Param("window", "int", 128, 1, 4096, step=1, log=True, help="sliding window w: a query reads its w latest keys"),
    Param("layers", "int", 4, 1, 16, step=1, help="stacked layers for how far information travels"),
    Param("sram_kib", "int", 192, 64, 1024, step=1, log=True, help="on-chip SRAM M in KiB (A100: 192 per SM)"),
)
QUICK = {"n": 6, "tile": 4, "n_max": 512, "window": 32}
COURSE = ("lecture06", 130)  # the course map's section (web/course_map.py) and place in it
HEAVY = True


@dataclass
class HandStep:
    tile: int  # 1, 2, ...
    first: int  # first key of the tile, counted from 1
    last: int
    scores: Vector  # q k_j / sqrt(2) for the tile's keys
    tile_max: float
    m_old: float | None  # None before the first tile (-inf)
    m: float  # running max after the tile
    rescale: float  # exp(m_old - m): what the earlier sum and output are multiplied by (0 on the first tile)
    l: float  # running sum of exp(score - m)
    acc: Vector  # unnormalised output
    out: Vector  # acc / l: the output if the keys ended here


@dataclass
class Hand:
    q: Vector
    k: Matrix  # (n, 2)
    v: Matrix  # (n, 2)
    scores: Vector  # all n scores
    weights: Vector  # softmax of the scores, from attention()
    steps: list[HandStep]
    flash_out: Vector
    attention_out: Vector
    max_abs_diff: float


@dataclass
class Traffic:
    n: int
    d: int
    sram_kib: int
    m_elements: int  # M: SRAM in fp16 elements
    block_c: int  # B_c = ceil(M / 4d)
    block_r: int  # B_r = min(B_c, d)
    t_c: int  # K/V tiles: ceil(n / B_c)
    standard: int  # 4 n d + 4 n^2 elements
    flash: int  # 3 n d + 2 n + T_c (3 n d + 4 n)
    ratio: float  # standard / flash


@dataclass
class MaskCost:
    name: str  # dense | causal | sliding | block_sparse
    allowed: int  # entries the mask allows
    computed: int  # entries of the tiles the loop computed
    closed_form: int  # the tiles' entries by formula
    total: int  # n^2
    allowed_share: float
    computed_share: float
    label: str = ""  # the name in the requested language


@dataclass
class Reach:
    layers: int  # L
    sliding_first: int  # earliest key (from 1) whose information reached the last query
    sliding_formula: int  # max(1, n - L (w - 1))
    sliding_back: int  # positions back: n - sliding_first
    sparse_unseen: int  # keys the last query still cannot reach through block-sparse layers
    sparse_formula: int  # (I - 1) * block, I = the last query's block


@dataclass
class FlashResult(Shown):
    topic: str
    params: dict
    hand: Hand
    memory: list[MemoryPoint]
    plain_growth: float  # from the increments: 2 = n^2
    tiled_growth: float  # 1 = n
    plain_slope: float  # log-log least squares, shown
    tiled_slope: float
    traffic: Traffic
    timings: list[Timing]
    masks: list[MaskCost]
    reach: list[Reach]
    claims: list[Claim]


def check_sizes(p: dict) -> None:
    per_side = p["n_max"] / p["block"]
    lo, hi = TILES_PER_SIDE
    if not lo <= per_side <= hi:
        raise ParamError(
            f"block must be from n_max/{hi} to n_max/{lo} (from {math.ceil(p['n_max'] / hi)} to "
            f"{p['n_max'] // lo} at n_max={p['n_max']}), got block={p['block']}",
            "block",
            "explain.error.flash_block",
            value=p["block"],
            n_max=p["n_max"],
            lo=math.ceil(p["n_max"] / hi),
            hi=p["n_max"] // lo,
        )


def cost(p: dict) -> Cost:
    """Refused before anything runs when the tiles per side leave the range; else the (n, n) scores and weights
    of attention() at n_max, the three masks and the timing copies."""
    check_sizes(p)
    n = p["n_max"]
    # + the passes around them, and what the allocator still holds from a lesson before in the same process
    return Cost.of_bytes(8 * n * n + 3 * n * n + 16 * n * p["d_k"], extra_mb=32.0)


def hand_example(n: int, tile: int, seed: int) -> Hand:
    g = torch.Generator().manual_seed(seed)
    q = torch.randint(-2, 3, (1, HAND_D), generator=g).float()  # (1, 2)
    k = torch.randint(-2, 3, (n, HAND_D), generator=g).float()  # (n, 2)
    v = torch.randint(-3, 4, (n, HAND_D), generator=g).float()  # (n, 2)
    ref, weights = attention(q, k, v)  # (1, 2), (1, n)
    out, raw = flash_steps(q, k, v, tile=tile)
    steps, m_old = [], None
    for i, s in enumerate(raw, start=1):
        m = float(s.m[0])
        steps.append(
            HandStep(
                i,
                s.cols[0] + 1,
                s.cols[1],
                tolist(s.scores[0]),
                float(s.scores[0].max()),
                m_old,
                m,
                float(s.rescale[0]),
                float(s.l[0]),
                tolist(s.acc[0]),
                tolist(s.out[0]),
            )
        )
        m_old = m
    scores = (q @ k.T / math.sqrt(HAND_D))[0]  # (n,)
    return Hand(
        tolist(q[0]),
        tolist(k),
        tolist(v),
        tolist(scores),
        tolist(weights[0]),
        steps,
        tolist(out[0]),
        tolist(ref[0]),
        float((out - ref).abs().max()),
    )


def traffic(n: int, d: int, sram_kib: int) -> Traffic:
    """HBM elements read and written: Algorithm 0 (standard) and Algorithm 1 (FlashAttention) of Dao et al. 2022."""
    m_el = sram_kib * 1024 // SRAM_BYTES_PER_ELEMENT
    b_c = math.ceil(m_el / (4 * d))
    t_c = math.ceil(n / b_c)
    standard = 4 * n * d + 4 * n * n
    flash = 3 * n * d + 2 * n + t_c * (3 * n * d + 4 * n)
    return Traffic(n, d, sram_kib, m_el, b_c, min(b_c, d), t_c, standard, flash, standard / flash)


def tile_closed_form(name: str, n: int, b: int, window: int) -> int:
    """Entries of the tiles a mask leaves (rows x cols summed over kept (query tile, key tile) pairs)."""
    total = 0
    for i0 in range(0, n, b):
        i1 = min(i0 + b, n)
        rows, big_i = i1 - i0, i0 // b
        if name == "dense":
            keys = n
        elif name == "causal":
            keys = i1  # key tiles 0 .. I: every key up to the tile's last query
        elif name == "sliding":
            keys = i1 - max(0, i0 - window + 1) // b * b  # key tiles from the one holding i0 - w + 1 to I
        else:  # block_sparse: key tiles max(0, I - local + 1) .. I and 0 .. sinks - 1
            kept = set(range(max(0, big_i - LOCAL + 1), big_i + 1)) | set(range(min(SINKS, big_i + 1)))
            keys = sum(min(n, (j + 1) * b) - j * b for j in kept)
        total += rows * keys
    return total


def mask_costs(n: int, b: int, window: int) -> tuple[list[MaskCost], dict]:
    masks = {
        "dense": None,
        "causal": causal_mask(n),
        "sliding": sliding_window_mask(n, window),
        "block_sparse": block_sparse_mask(n, b, local=LOCAL, sinks=SINKS),
    }
    rows = []
    for name, mask in masks.items():
        allowed = n * n if mask is None else int(mask.sum())
        computed = computed_scores(n, n, mask, b)
        rows.append(
            MaskCost(
                name,
                allowed,
                computed,
                tile_closed_form(name, n, b, window),
                n * n,
                allowed / (n * n),
                computed / (n * n),
            )
        )
    return rows, masks


def reach_table(sliding: torch.Tensor, sparse: torch.Tensor, window: int, block: int, layers: int) -> list[Reach]:
    n = sliding.shape[-1]
    last_block = (n - 1) // block
    out = []
    for L, (s, b) in enumerate(zip(reached(sliding, layers), reached(sparse, layers)), start=1):
        first = int(s.nonzero()[0]) + 1
        out.append(
            Reach(L, first, max(1, n - L * (window - 1)), n - first, int((~b).sum()), max(0, last_block - 1) * block)
        )
    return out


@lesson
def flash(
    n: int = 8,
    tile: int = 2,
    seed: int = 3,
    d_k: int = 64,
    block: int = 64,
    n_max: int = 1024,
    window: int = 128,
    layers: int = 4,
    sram_kib: int = 192,
    *,
    lang: str = "zh",
) -> FlashResult:
    """The online softmax by hand; peak memory, slow-memory traffic and time; what sparse masks save and miss."""
    p = check(
        PARAMS,
        dict(
            n=n,
            tile=tile,
            seed=seed,
            d_k=d_k,
            block=block,
            n_max=n_max,
            window=window,
            layers=layers,
            sram_kib=sram_kib,
        ),
    )
    cost(p)
    big, d, b = p["n_max"], p["d_k"], p["block"]
    hand = hand_example(p["n"], p["tile"], p["seed"])
    ns = [big // 4, big // 2, big]
    memory = [memory_point(m, d, b, seed=p["seed"]) for m in ns]
    plain = [pt.plain_bytes for pt in memory]
    tiled = [pt.tiled_bytes for pt in memory]
    io = traffic(big, d, p["sram_kib"])
    clock = [replace(x, label=t(f"explain.flash.timer.{x.name}", lang)) for x in timings(big, d, b, seed=p["seed"])]
    masks, made = mask_costs(big, b, p["window"])
    masks = [replace(m, label=t(f"explain.flash.mask.{m.name}", lang)) for m in masks]
    reach = reach_table(made["sliding"], made["block_sparse"], p["window"], b, p["layers"])
    claims = make_claims(p, hand, memory, growth_order(ns, plain), growth_order(ns, tiled), io, masks, reach, lang)
    return FlashResult(
        "flash",
        p,
        hand,
        memory,
        growth_order(ns, plain),
        growth_order(ns, tiled),
        loglog_slope(ns, plain),
        loglog_slope(ns, tiled),
        io,
        clock,
        masks,
        reach,
        claims,
    )

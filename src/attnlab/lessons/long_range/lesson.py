"""Chapter 01's table: an LSTM grows fragile beyond about 100 tokens, while a Transformer is bounded only by its
context. Measured: a symbol to recall after d distractors, an LSTM, a GRU and a Transformer of one size trained
alike at each distance, accuracy against d; and where the measurement at CPU scale differs from the table, it says
so with the numbers.

The experiment (runs.py): at each distance (8, then ×4 up to `longest`), each model trained `steps` steps from
`seeds` seeds, each asked 500 held-out sequences.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead, weakest
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, check, lesson
from attnlab.lessons.common.result import Shown
from attnlab.lessons.long_range import runs
from attnlab.train import progress

CHANCE = 1 / len(runs.VALUES)
HOLDS_MARGIN = 0.5  # the Transformer at the longest distance beats chance by half of all questions
LEAD_MARGIN = 0.3  # and leads the better recurrent net there by this much
FADES_MARGIN = 0.3  # the better recurrent net loses this much from the shortest distance to the longest
LONGEST = (32, 128, 256)
# Each claim's strongest null: every model trained alike on answers drawn at random (the same answers as often, no
# link to the sequence), at the same seeds.
NULLS = {name: Null("shuffled", shuffle=True) for name in ("holds", "leads", "fades")}

PARAMS = (
    Param("steps", "int", 300, 0, 3000, step=10, help="training steps of each model at each distance (0: untrained)"),
    Param("longest", "choice", 128, choices=LONGEST, help="the longest distance d (from 8, ×4 each point)"),
    Param("seeds", "int", 1, 1, 4, step=1, help="how many times each model is trained (seeds 0, 1, ...)"),
    Param("shuffle", "bool", False, help="train on answers drawn at random (the null: nothing to carry)"),
)
QUICK = {"steps": 20, "longest": 32}
COURSE = ("chapter01", 45)  # the course map's section (web/course_map.py) and place in it
HEAVY = True


@dataclass
class LongRangeResult(Shown):
    topic: str
    params: dict
    distances: list[int]
    accuracy: dict  # model -> [mean over seeds, per distance]
    per_seed: dict  # model -> [[per seed] per distance]
    n_params: dict  # model -> parameters
    n_asked: int
    example: str  # one sequence at the shortest distance, with its answer
    note: str
    claims: list[Claim] = field(default_factory=list)


def distances(longest: int) -> list[int]:
    out, d = [], 8
    while d < longest:
        out.append(d)
        d *= 4
    return out + [longest]


def cost(p: dict) -> Cost:
    """Trains 3 small models per distance and seed (stoppable at every step). The largest pass is a Transformer's
    training step at the longest distance: BATCH sequences, their logits and activations, and the tensors autograd
    keeps of each head's T × T scores (scores, weights, their masked and dropped copies, their gradients)."""
    t_max = p["longest"] + 3
    per_token = len(runs.CHARS) + 12 * runs.D_MODEL + 6 * runs.N_HEADS * t_max
    return Cost.of_bytes(4 * runs.BATCH * t_max * per_token, trains=True, extra_mb=30.0)


@lesson
@lru_cache(maxsize=4)
def measured(steps: int, longest: int, seeds: int, shuffle: bool) -> dict:
    """model -> [[accuracy per seed] per distance], trained once for both languages."""
    ds = distances(longest)
    total = steps * seeds * len(ds)
    for name in runs.MODELS:
        progress.report(name, 0, total)  # all three listed from the start
    out = {}
    for name in runs.MODELS:
        done, rows = 0, []
        for d in ds:
            row = []
            for seed in range(seeds):
                model = runs.train(
                    name, d, seed, steps, shuffle, on_step=lambda s, k=done: progress.report(name, k + s, total)
                )
                row.append(runs.accuracy(model, d))
                done += steps
            rows.append(row)
        out[name] = rows
    return out


def claims_of(r: LongRangeResult, lang: str) -> list[Claim]:
    seeds = r.params["seeds"]
    far, near = r.distances[-1], r.distances[0]
    tf = r.per_seed["transformer"][-1]
    best_far = [max(a, b) for a, b in zip(r.per_seed["lstm"][-1], r.per_seed["gru"][-1])]  # the better recurrent net
    best_near = [max(a, b) for a, b in zip(r.per_seed["lstm"][0], r.per_seed["gru"][0])]
    holds = weakest([a - CHANCE for a in tf])
    leads = weakest([a - b for a, b in zip(tf, best_far)])
    fades = weakest([a - b for a, b in zip(best_near, best_far)])
    seeds_control = t("explain.long_range.control.seeds", lang, seeds=seeds)
    return [
        lead(
            "holds",
            t("explain.long_range.claim.holds", lang, d=far, acc=r.accuracy["transformer"][-1], margin=HOLDS_MARGIN),
            lang,
            measured=CHANCE + holds,
            baseline=CHANCE,
            margin=HOLDS_MARGIN,
            control=t("explain.long_range.control.chance", lang),
            values={"accuracy": r.accuracy["transformer"][-1], "chance": CHANCE, "distance": far},
            hint=t("explain.long_range.hint.steps", lang),
        ),
        lead(
            "leads",
            t(
                "explain.long_range.claim.leads",
                lang,
                d=far,
                tf=r.accuracy["transformer"][-1],
                lstm=r.accuracy["lstm"][-1],
                gru=r.accuracy["gru"][-1],
                lead=leads,
                margin=LEAD_MARGIN,
            ),
            lang,
            measured=leads,
            baseline=0.0,
            margin=LEAD_MARGIN,
            control=seeds_control,
            values={
                "transformer": r.accuracy["transformer"][-1],
                "lstm": r.accuracy["lstm"][-1],
                "gru": r.accuracy["gru"][-1],
            },
        ),
        lead(
            "fades",
            t("explain.long_range.claim.fades", lang, near=near, far=far, fall=fades, margin=FADES_MARGIN),
            lang,
            measured=fades,
            baseline=0.0,
            margin=FADES_MARGIN,
            control=seeds_control,
            values={"near": near, "far": far, "smallest_fall": fades},
        ),
    ]


def long_range(
    steps: int = 300, longest: int = 128, seeds: int = 1, shuffle: bool = False, *, lang: str = "zh"
) -> LongRangeResult:
    """Accuracy against distance for a Transformer, an LSTM and a GRU of one size, trained alike."""
    p = check(PARAMS, dict(steps=steps, longest=longest, seeds=seeds, shuffle=shuffle))
    per_seed = measured(p["steps"], p["longest"], p["seeds"], p["shuffle"])
    ds = distances(p["longest"])
    x, v = runs.sequences(torch.Generator().manual_seed(7), 1, ds[0])
    example = "".join(runs.CHARS[i] for i in x[0].tolist()) + " → " + runs.CHARS[int(v[0])]
    note = t(
        "explain.long_range.note" + ("_shuffled" if p["shuffle"] else ""),
        lang,
        steps=p["steps"],
        batch=runs.BATCH,
        lr=runs.LR,
        seeds=p["seeds"],
        asked=runs.N_ASKED,
        values=len(runs.VALUES),
        noise=len(runs.NOISE),
    )
    r = LongRangeResult(
        "long-range",
        p,
        ds,
        {m: [sum(v) / len(v) for v in per_seed[m]] for m in runs.MODELS},
        per_seed,
        {m: runs.n_params(m) for m in runs.MODELS},
        runs.N_ASKED,
        example,
        note,
    )
    r.claims = claims_of(r, lang)
    return r


__all__ = ["PARAMS", "LongRangeResult", "long_range", "cost"]

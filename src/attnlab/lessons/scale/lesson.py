"""⑦ Scale: the sizes the course quotes, counted by the lab; what this machine would need to train them; a learner's
own configuration; and, given a finished `attnlab scale` sweep, the law and the emergence table it measured.

The experiment: each published model's configuration (models/published.py) goes through the lab's own counters
(models/count.py, exact against `sum(p.numel())` and FlopCounterMode on the lab's models). The count must come within
2% of the figure its authors publish, or within what a rounder figure allows ("7B": 6.5B to 7.5B); a row whose
configuration is itself inexact (a vocabulary given only as "about 37,000") is named in the claim with its
difference, not checked. Training compute is 6·N·D for the published token counts, beside the counter's own total
(which adds attention's T² terms); GPT-3's published 3.14e23 is the authors' 6·N·D, so the claim compares the
counter's weight products with it and says what attention adds. This machine's speed is a float32 matrix
product timed here on one thread; the days it would need are the compute divided by that rate, a lower bound (real
training reaches a fraction of a matmul's peak). A sweep is read, never run, here: `attnlab scale` makes one.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from attnlab.i18n import t
from attnlab.io import safe_read
from attnlab.lessons.common.claims import Claim, within
from attnlab.lessons.common.params import Param, ParamError, check, lesson
from attnlab.lessons.common.result import Shown
from attnlab.lessons.scale.scaleup import ScaleUp, scale_up
from attnlab.models.count import (
    Architecture,
    count_flops,
    count_params,
    forward_flops,
    non_embedding_params,
    param_parts,
)
from attnlab.models.published import PUBLISHED, VOCABULARIES

PARAMS = (
    Param("layers", "int", 0, 0, 256, step=1, help="your configuration's blocks (0: none typed)"),
    Param("d_model", "int", 0, 0, 65536, step=1, help="its width d_model"),
    Param("heads", "int", 0, 0, 256, step=1, help="its attention heads (divide d_model)"),
    Param("kv_heads", "int", 0, 0, 256, step=1, help="its K/V heads: 0 = heads (multi-head), 1 = MQA, between = GQA"),
    Param("d_ff", "int", 0, 0, 1_048_576, step=1, help="its FFN hidden width (0: 4·d_model)"),
    Param("vocab", "int", 0, 0, 1_048_576, step=1, help="its vocabulary"),
    Param("context", "int", 0, 0, 1_048_576, step=1, help="its context length"),
    Param("gated", "bool", False, help="a gated FFN (SwiGLU: three matrices)"),
    Param("tied", "bool", True, help="the output layer shares the token table"),
    Param("tokens", "int", 0, 0, 10**15, step=1, help="its training tokens (0: 20 per parameter, Chinchilla's rule)"),
    Param(
        "sweep",
        "str",
        "",
        max_len=4096,
        cli_only=True,
        help="a finished `attnlab scale` folder (or its scale.json) to show beside the counts",
    ),
)
QUICK = {"layers": 2, "d_model": 64, "heads": 4, "vocab": 100, "context": 32}
COURSE = ("chapter16", 30)  # the course map's section (web/course_map.py) and place in it
TOGETHER = True
TOLERANCE = 0.02  # a count within 2% of the published figure (or of what a rounder figure allows)
# rows whose configuration itself is not published exactly (the vocabulary given only as "about 37,000"): the
# counter has nothing exact to count there, so the counts claim names them with their difference instead
INEXACT = ("vocabulary",)
CHINCHILLA = 20  # tokens per parameter at the compute-optimal size (Hoffmann et al. 2022)
MATMUL_N = 512


@dataclass
class Row:
    name: str
    config: dict  # the Architecture's fields
    counted: int  # every parameter, by the lab's counter
    published: int  # the authors' figure
    off: float  # (counted - published) / published
    differs: str | None  # why a count and figure differ by more than 2%, when known: "vocabulary" | "name"
    non_embedding: int
    flops_per_token: float  # forward, at the model's context: 2·N plus attention
    tokens: int | None  # published training tokens
    train_flops_6nd: float | None  # 6 · counted · tokens
    train_flops: float | None  # count_flops: forward and backward, attention included
    published_train_flops: float | None
    days_here: float | None  # train_flops at this machine's measured rate
    source: str = ""
    layers: int = 0  # blocks (the decoder's, for the encoder-decoder)


@dataclass
class Vocabulary:
    name: str
    size: int
    params_768: int  # the token table at GPT-2 small's / BERT-base's width
    params_4096: int  # at Llama-2-7B's


@dataclass
class Machine:
    flops_per_s: float  # float32 matrix product, one thread
    n: int
    seconds: float  # best time of one n×n product


@dataclass
class Yours:
    config: dict
    counted: int
    non_embedding: int
    parts: dict
    flops_per_token: float
    tokens: int
    train_flops: float
    days_here: float


@dataclass
class ScaleResult(Shown):
    topic: str
    params: dict
    published: list[Row]
    vocabularies: list[Vocabulary]
    flops_per_token: dict  # name -> forward FLOPs per token (contract: explain scale --json)
    train_flops: dict  # name -> training FLOPs for the published tokens (None where no count is published)
    machine: Machine
    yours: Yours | None
    sweep: dict | None  # what `attnlab scale` wrote, with the folder it was read from
    scale_up: ScaleUp  # 上亿倍? the lab's 静夜思 model against the published model of most compute
    claims: list[Claim] = field(default_factory=list)


def measure_machine(n: int = MATMUL_N, repeats: int = 5) -> Machine:
    """This machine's float32 matrix-product rate: the best of `repeats` timings of an n×n product (2·n³ FLOPs)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b  # warm-up
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return Machine(2 * n**3 / best, n, best)


def row(model, machine: Machine) -> Row:
    a = model.architecture
    n = count_params(a)
    trained = count_flops(a, model.tokens) if model.tokens else None
    return Row(
        model.name,
        a.to_dict(),
        n,
        model.params,
        (n - model.params) / model.params,
        model.differs,
        non_embedding_params(a),
        forward_flops(a) / a.context,
        model.tokens,
        6 * n * model.tokens if model.tokens else None,
        trained,
        model.train_flops,
        trained / machine.flops_per_s / 86400 if trained else None,
        model.source,
        a.layers,
    )


def yours(p: dict, machine: Machine) -> Yours | None:
    """The typed configuration, or None when none was typed (layers 0); ParamError names what is missing or wrong."""
    if not p["layers"]:
        return None
    for name in ("d_model", "heads", "vocab", "context"):
        if not p[name]:
            raise ParamError(
                f"{name} is needed with --layers: give every size of your configuration",
                name,
                "explain.scale.error.missing",
                what=name,
            )
    try:
        a = Architecture(
            layers=p["layers"],
            d_model=p["d_model"],
            heads=p["heads"],
            vocab=p["vocab"],
            context=p["context"],
            kv_heads=p["kv_heads"] or None,
            d_ff=p["d_ff"] or None,
            gated=p["gated"],
            head="tied" if p["tied"] else "separate",
        )
    except ValueError as err:
        blamed = next(
            (n for n in ("kv_heads", "d_ff", "heads") if str(err).startswith(n)), "heads"
        )  # the field at fault
        raise ParamError(str(err), blamed, "explain.scale.error.shape", why=str(err)) from None
    n = count_params(a)
    tokens = p["tokens"] or CHINCHILLA * n
    trained = count_flops(a, tokens)
    return Yours(
        a.to_dict(),
        n,
        non_embedding_params(a),
        param_parts(a),
        forward_flops(a) / a.context,
        tokens,
        trained,
        trained / machine.flops_per_s / 86400,
    )


def read_sweep(path: str) -> dict | None:
    """A finished sweep's scale.json (from its folder or the file itself), or None when no path is given."""
    if not path:
        return None
    where = Path(path).expanduser()
    file = where
    try:
        file = where / "scale.json" if where.is_dir() else where
        data = safe_read.read_json(file, "scale.json")  # a regular file, bounded in size and nesting: never blocks
    except (OSError, ValueError) as err:
        raise ParamError(
            f"cannot read a finished sweep at {path}: {err}", "sweep", "explain.scale.error.sweep", path=path
        ) from None
    if not isinstance(data, dict) or not {"runs", "fit", "optimum"} <= set(data):
        raise ParamError(
            f"{file} is not a scale.json written by `attnlab scale`", "sweep", "explain.scale.error.sweep", path=path
        )
    return {**data, "folder": str(file.parent)}


def figure_tolerance(published: int) -> float:
    """What a published figure allows: TOLERANCE, or half a unit of its last significant digit when it is written
    rounder than that ("7B" stands for 6.5B to 7.5B, "110M" for 105M to 115M)."""
    unit = 1
    while published % (unit * 10) == 0:
        unit *= 10
    return max(TOLERANCE, unit / 2 / published)


def claims_for(rows: list[Row], lang: str) -> list[Claim]:
    """The counts against the published figures, every row whose configuration is published exactly, each within
    what its figure allows (figure_tolerance); and the counter's training compute for the one published figure
    (GPT-3's 3.14e23 FLOPs), which the authors computed as 6·N·D: it leaves out attention's T² terms, so the
    counter's weight products alone are compared, and its full total is said beside them."""
    checked = [r for r in rows if r.differs not in INEXACT]
    unchecked = [r for r in rows if r.differs in INEXACT]
    worst = max(checked, key=lambda r: abs(r.off) / figure_tolerance(r.published))
    tol = figure_tolerance(worst.published)
    left = "; ".join(
        t(
            "explain.scale.claim.unchecked",
            lang,
            name=r.name,
            why=t(f"explain.scale.differs.{r.differs}", lang),
            off=100 * r.off,
        )
        for r in unchecked
    )
    out = [
        within(
            "counts",
            t(
                "explain.scale.claim.counts",
                lang,
                n=len(checked),
                worst=worst.name,
                off=100 * worst.off,
                tol=100 * tol,
                floor=100 * TOLERANCE,
                left=left or "—",
            ),
            lang,
            measured=abs(worst.off),
            expected=0.0,
            tol=tol,
            control=t("explain.scale.control.published", lang),
            values={
                "models": len(checked),
                "worst": worst.name,
                "worst_off": worst.off,
                "offs": {r.name: r.off for r in checked},
                "tolerances": {r.name: figure_tolerance(r.published) for r in checked},
                "unchecked": {r.name: r.off for r in unchecked},
            },
        )
    ]
    for r in rows:
        if r.published_train_flops and r.train_flops:
            model = next(m for m in PUBLISHED if m.name == r.name)
            # the counter at one token a sequence: Q·Kᵀ and A·V have one key to read, the weights' products are all
            weights = count_flops(model.architecture, r.tokens, seq_len=1)
            off = (weights - r.published_train_flops) / r.published_train_flops
            out.append(
                within(
                    "compute",
                    t(
                        "explain.scale.claim.compute",
                        lang,
                        name=r.name,
                        tokens=r.tokens,
                        counted=r.train_flops,
                        attention=100 * (r.train_flops - weights) / r.train_flops,
                        full_off=100 * (r.train_flops - r.published_train_flops) / r.published_train_flops,
                        weights=weights,
                        published=r.published_train_flops,
                        off=100 * off,
                        tol=100 * TOLERANCE,
                    ),
                    lang,
                    measured=abs(off),
                    expected=0.0,
                    tol=TOLERANCE,
                    control=t("explain.scale.control.compute", lang),
                    values={
                        "model": r.name,
                        "weights_only": weights,
                        "published": r.published_train_flops,
                        "counted": r.train_flops,
                        "six_nd": r.train_flops_6nd,
                    },
                )
            )
    return out


@lesson
def scale(
    layers: int = 0,
    d_model: int = 0,
    heads: int = 0,
    kv_heads: int = 0,
    d_ff: int = 0,
    vocab: int = 0,
    context: int = 0,
    gated: bool = False,
    tied: bool = True,
    tokens: int = 0,
    sweep: str = "",
    *,
    lang: str = "zh",
) -> ScaleResult:
    """The published models counted, this machine's rate, your configuration, and a finished sweep if named."""
    p = check(
        PARAMS,
        dict(
            layers=layers,
            d_model=d_model,
            heads=heads,
            kv_heads=kv_heads,
            d_ff=d_ff,
            vocab=vocab,
            context=context,
            gated=gated,
            tied=tied,
            tokens=tokens,
            sweep=sweep,
        ),
    )
    machine = measure_machine()
    mine = yours(p, machine)
    rows = [row(m, machine) for m in PUBLISHED]
    vocabularies = [Vocabulary(name, size, size * 768, size * 4096) for name, size in VOCABULARIES]
    return ScaleResult(
        "scale",
        p,
        rows,
        vocabularies,
        {r.name: r.flops_per_token for r in rows},
        {r.name: r.train_flops for r in rows},
        machine,
        mine,
        read_sweep(p["sweep"]),
        scale_up(rows),
        claims_for(rows, lang),
    )

"""⑦ Where the memory goes: training bytes per parameter, activations, the KV cache, and what fits on a card.

The experiment: the formulas of models/memory.py (ZeRO's 16 bytes a parameter, Korthikanti et al.'s activations,
the KV cache 2·L·h_kv·d_head·T·B·bytes) are held to the lab's own GPT. A small model (2 layers, d_model 64, 4 heads,
context 32, batch 4) is built once with multi-head attention and once with `lab_kv_heads` K/V heads; measured are
the bytes of its parameters, its gradients after one backward, AdamW's state after one step, the tensors autograd
saves (fused attention and the written-out path), the KV cache after decoding 32 tokens, and the live peak of one
training step (measure.py). Each must equal the formula to the byte, except the peak, which must come within
PEAK_TOLERANCE of weights + gradients + AdamW + activations: the sum assumes everything is held at once, while the
step frees activations as gradients appear (lower) and makes temporaries the sum leaves out (higher). Then the same
formulas size the published models (models/published.py) and a typed configuration: training state, activations,
inference memory, KV cache per sequence, and how many sequences fit on a 24 GB and an 80 GB card.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import torch

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, lead, within
from attnlab.lessons.common.nulls import Null
from attnlab.lessons.common.params import Param, ParamError, check, lesson, seeded
from attnlab.lessons.common.result import Shown
from attnlab.lessons.memory.measure import TrainStep, kv_cache_bytes_after, layer_kv_cache_bytes_meta, train_step
from attnlab.models import GPT, GPTConfig
from attnlab.models.count import Architecture, count_params
from attnlab.models.memory import (
    DTYPE_BYTES,
    GB,
    PER_PARAM,
    adamw_state_bytes,
    inference_bytes,
    kv_cache_of,
    lab_activation_bytes,
    per_param_bytes,
    sequences_that_fit,
    training_bytes,
)
from attnlab.models.published import PUBLISHED


def slug(name: str) -> str:
    """'Llama-2-7B' -> 'llama-2-7b', 'Transformer base (2017)' -> 'transformer-base-2017'."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


MODELS = {slug(m.name): m for m in PUBLISHED}
LAB = dict(context_length=32, d_model=64, n_heads=4, n_layers=2, vocab_size=64, norm_first=True, activation="gelu")
LAB_BATCH = 4
CARDS_GB = (24, 80)  # a consumer card (RTX 4090) and a data-centre one (A100/H100 80 GB)
PEAK_TOLERANCE = 0.15  # the measured peak within 15% of the summed formula
GQA_MARGIN = 0.5  # "smaller": the MHA cache at least 1.5 times the GQA one
LLAMA_CONTEXT = 2048  # Llama-2-7B's KV cache is measured at context 2048 in fp16, one sequence
# The strongest null of "GQA's cache is smaller" (lessons/common/nulls.py): the measured model with as many K/V heads
# as query heads (multi-head attention), everything else the same. The other claims are identities.
NULLS = {"gqa_smaller": Null("mha", lab_kv_heads=4)}

PARAMS = (
    Param("model", "choice", "llama-2-7b", choices=tuple(MODELS), help="the published configuration to size"),
    Param(
        "context", "int", 2048, 1, 1_048_576, step=1, help="tokens a sequence holds (capped at a model's own context)"
    ),
    Param("batch", "int", 1, 1, 4096, step=1, help="sequences held at once"),
    Param("dtype", "choice", "fp16", choices=tuple(DTYPE_BYTES), help="inference weights and KV cache"),
    Param("layers", "int", 0, 0, 256, step=1, help="your configuration's blocks (0: none typed, size the model above)"),
    Param("d_model", "int", 0, 0, 65536, step=1, help="its width d_model"),
    Param("heads", "int", 0, 0, 256, step=1, help="its attention heads (divide d_model)"),
    Param("kv_heads", "int", 0, 0, 256, step=1, help="its K/V heads: 0 = heads (multi-head), 1 = MQA, else GQA"),
    Param("d_ff", "int", 0, 0, 1_048_576, step=1, help="its FFN hidden width (0: 4·d_model)"),
    Param("vocab", "int", 0, 0, 1_048_576, step=1, help="its vocabulary"),
    Param("gated", "bool", False, help="a gated FFN (SwiGLU: three matrices)"),
    Param("lab_kv_heads", "choice", 2, choices=(1, 2, 4), help="K/V heads of the lab's measured GQA model (4 = MHA)"),
)
QUICK = {"layers": 2, "d_model": 64, "heads": 4, "kv_heads": 2, "vocab": 100, "context": 32}
COURSE = ("chapter16", 40)  # the course map's section (web/course_map.py) and place in it
TOGETHER = True


@dataclass
class Entry:
    """One configuration sized by the formulas."""

    name: str
    config: dict  # the Architecture's fields
    params: int
    heads: int
    kv_heads: int  # = heads for multi-head attention
    context: int  # the tokens per sequence used here: the chosen context, capped at the model's own
    batch: int
    dtype: str  # of the inference weights and KV cache
    kv_cache_per_sequence: int  # bytes, one sequence at `context`
    kv_cache_bytes: int  # bytes, `batch` sequences
    bytes: dict  # weights, kv_cache_per_sequence, kv_cache, kv_cache_mha (as many K/V heads as heads), inference
    # (weights + kv_cache), inference_mha, state (16 bytes a parameter), activations (mixed, Korthikanti, no
    # recomputation), activations_recomputed (attention recomputed: 34·s·b·h), training_fp32, training_mixed
    gb: dict  # the same sizes in GB (10⁹ bytes), as the tables show them
    training: dict  # precision -> {part: bytes, "activations", "total"} at `context` and `batch`
    fits: dict  # card size in GB -> sequences that fit beside the weights (0: the weights alone do not fit)


@dataclass
class Lab:
    """The lab's model measured and the formula for each part (bytes)."""

    config: dict
    batch: int
    tokens: int  # decoded into the KV cache
    params: int
    param_tensors: int
    gqa_kv_heads: int


@dataclass
class MemoryResult(Shown):
    topic: str
    params: dict
    per_param_bytes: dict  # "fp32" | "mixed" -> {part: bytes, "total": 16}
    chosen: Entry
    kv_cache_bytes: int  # the chosen configuration's (contract: explain memory --json)
    published: list[Entry]
    lab: Lab
    measured: dict  # part -> bytes measured on the lab's model
    formula: dict  # part -> bytes by the formula, same keys
    difference: dict  # part -> measured - formula
    moments: dict  # live bytes during that step: start, end of forward, peak, end of backward, end of the step
    cuda_peak: int | None  # torch.cuda.max_memory_allocated of the same step, where a GPU is present
    cards_gb: list[int]
    filling: dict  # the chosen model's card filling up: sequences held -> GB (weights + KV cache; and if multi-head)
    claims: list[Claim] = field(default_factory=list)


def entry(name: str, a: Architecture, context: int, batch: int, dtype: str) -> Entry:
    s = min(context, a.context)
    n = count_params(a)
    mha = Architecture(**{**a.to_dict(), "kv_heads": None})
    training = {p: training_bytes(a, s, batch, p) for p in PER_PARAM}
    sizes = dict(
        weights=n * DTYPE_BYTES[dtype],
        kv_cache_per_sequence=kv_cache_of(a, s, 1, dtype),
        kv_cache=kv_cache_of(a, s, batch, dtype),
        kv_cache_mha=kv_cache_of(mha, s, batch, dtype),
        inference=inference_bytes(a, s, batch, dtype),
        inference_mha=inference_bytes(mha, s, batch, dtype),
        state=training["mixed"]["total"] - training["mixed"]["activations"],
        activations=training["mixed"]["activations"],
        activations_recomputed=training_bytes(a, s, batch, "mixed", recompute_attention=True)["activations"],
        training_fp32=training["fp32"]["total"],
        training_mixed=training["mixed"]["total"],
    )
    return Entry(
        name,
        a.to_dict(),
        n,
        a.heads,
        a.kv_heads or a.heads,
        s,
        batch,
        dtype,
        sizes["kv_cache_per_sequence"],
        sizes["kv_cache"],
        sizes,
        {k: v / GB for k, v in sizes.items()},
        training,
        {str(gb): sequences_that_fit(gb * GB, a, s, dtype) for gb in CARDS_GB},
    )


def filling(e: Entry) -> dict:
    """The chosen model's card filling up: GB held against sequences held (weights + that many KV caches), to a
    little past what the largest card holds; and the same with multi-head attention's cache."""
    most = max(2, round(1.25 * e.fits[str(max(CARDS_GB))]))
    per_sequence_mha = e.bytes["kv_cache_mha"] // e.batch
    return {
        "sequences": [0, most],
        "gb": [e.gb["weights"], (e.bytes["weights"] + most * e.kv_cache_per_sequence) / GB],
        "gb_mha": [e.gb["weights"], (e.bytes["weights"] + most * per_sequence_mha) / GB],
    }


def typed(p: dict) -> Architecture | None:
    """The typed configuration (RoPE positions: no table to size by the context; an untied output layer), or None."""
    if not p["layers"]:
        return None
    for name in ("d_model", "heads", "vocab"):
        if not p[name]:
            raise ParamError(
                f"{name} is needed with --layers: give every size of your configuration",
                name,
                "explain.memory.error.missing",
                what=name,
            )
    try:
        return Architecture(
            layers=p["layers"],
            d_model=p["d_model"],
            heads=p["heads"],
            vocab=p["vocab"],
            context=p["context"],
            kv_heads=p["kv_heads"] or None,
            d_ff=p["d_ff"] or None,
            gated=p["gated"],
            positions="rope",
            head="separate",
        )
    except ValueError as err:
        blamed = next((n for n in ("kv_heads", "d_ff", "heads") if str(err).startswith(n)), "heads")
        raise ParamError(str(err), blamed, "explain.memory.error.shape", why=str(err)) from None


def measure_lab(gqa_kv_heads: int) -> tuple[Lab, dict, dict, TrainStep]:
    """The lab's model (MHA, and with gqa_kv_heads K/V heads): measured bytes and the formula's, part by part."""
    config = GPTConfig(**LAB)
    tokens = config.context_length
    step: TrainStep = train_step(config, LAB_BATCH)
    n = count_params(config)
    gqa = GPTConfig(**LAB, n_kv_heads=gqa_kv_heads)
    activations = lab_activation_bytes(config, LAB_BATCH, tokens)
    measured = {
        "weights": step.weights,
        "gradients": step.gradients,
        "adamw": step.adamw,
        "activations": step.activations,
        "activations_explicit": step.activations_explicit,
        "kv_cache_mha": kv_cache_bytes_after(GPT(config), LAB_BATCH, tokens),
        "kv_cache_gqa": kv_cache_bytes_after(GPT(gqa), LAB_BATCH, tokens),
        "peak": step.peak,
    }
    formula = {
        "weights": 4 * n,
        "gradients": 4 * n,
        "adamw": adamw_state_bytes(n, step.param_tensors),
        "activations": activations,
        "activations_explicit": lab_activation_bytes(config, LAB_BATCH, tokens, explicit=True),
        "kv_cache_mha": kv_cache_of(config, tokens, LAB_BATCH, "fp32"),
        "kv_cache_gqa": kv_cache_of(gqa, tokens, LAB_BATCH, "fp32"),
    }
    formula["peak"] = formula["weights"] + formula["gradients"] + formula["adamw"] + activations
    lab = Lab(config.to_dict(), LAB_BATCH, tokens, n, step.param_tensors, gqa_kv_heads)
    return lab, measured, formula, step


def claims_for(measured: dict, formula: dict, lab: Lab, per_param: dict, lang: str) -> list[Claim]:
    """Each exact part against its formula (0 bytes apart), the peak within PEAK_TOLERANCE, GQA's cache against
    MHA's, mixed precision's state against fp32's, and Llama-2-7B's cache formula against one of our attention layers
    of that shape, run on the meta device."""
    k = "explain.memory."
    out = []
    for cid, parts in (
        ("state", ("weights", "gradients", "adamw")),
        ("kv", ("kv_cache_mha", "kv_cache_gqa")),
        ("activations", ("activations", "activations_explicit")),
    ):
        worst = max(parts, key=lambda part: abs(measured[part] - formula[part]))
        off = measured[worst] - formula[worst]
        text = t(
            k + f"claim.{cid}",
            lang,
            worst=t(k + "part." + worst, lang),
            off=off,
            **{part: measured[part] for part in parts},
        )
        out.append(
            within(
                f"{cid}_exact",
                text,
                lang,
                measured=float(off),
                expected=0.0,
                tol=0.0,
                control=t(k + "control.formula", lang),
                values={**{part: [measured[part], formula[part]] for part in parts}, "worst": worst},
            )
        )
    ratio = measured["peak"] / formula["peak"]
    out.append(
        within(
            "peak",
            t(
                k + "claim.peak",
                lang,
                peak=measured["peak"],
                formula=formula["peak"],
                ratio=ratio,
                tol=100 * PEAK_TOLERANCE,
            ),
            lang,
            measured=ratio,
            expected=1.0,
            tol=PEAK_TOLERANCE,
            control=t(k + "control.sum", lang),
            values={"peak": measured["peak"], "formula": formula["peak"]},
        )
    )
    heads = lab.config["n_heads"]
    smaller = measured["kv_cache_mha"] / measured["kv_cache_gqa"]
    out.append(
        lead(
            "gqa_smaller",
            t(
                k + "claim.gqa",
                lang,
                heads=heads,
                kv=lab.gqa_kv_heads,
                ratio=smaller,
                expected=heads / lab.gqa_kv_heads,
            ),
            lang,
            measured=smaller,
            baseline=1.0,
            margin=GQA_MARGIN,
            control=t(k + "control.mha", lang),
            values={
                "mha": measured["kv_cache_mha"],
                "gqa": measured["kv_cache_gqa"],
                "expected": heads / lab.gqa_kv_heads,
            },
            hint=t(k + "hint.gqa", lang),
        )
    )
    fp32, mixed = per_param["fp32"]["total"], per_param["mixed"]["total"]
    out.append(
        within(
            "mixed_state",
            t(k + "claim.mixed", lang, fp32=fp32, mixed=mixed),
            lang,
            measured=float(mixed),
            expected=float(fp32),
            tol=0.0,
            control=t(k + "control.fp32", lang),
            values={"fp32": fp32, "mixed": mixed},
        )
    )
    a = MODELS["llama-2-7b"].architecture
    llama = kv_cache_of(a, LLAMA_CONTEXT, 1, "fp16")  # the formula
    kv = a.kv_heads or a.heads
    layer = layer_kv_cache_bytes_meta(a.d_model, a.heads, kv, LLAMA_CONTEXT, torch.float16)  # measured on one layer
    held = a.layers * layer  # every layer holds the same cache
    out.append(
        within(
            "llama_kv",
            t(
                k + "claim.llama",
                lang,
                layers=a.layers,
                kv=kv,
                d_k=a.d_model // a.heads,
                T=LLAMA_CONTEXT,
                layer=layer,
                held=held,
                bytes=llama,
                gb=llama / GB,
            ),
            lang,
            measured=float(held - llama),
            expected=0.0,
            tol=0.0,
            control=t(k + "control.formula", lang),
            values={"bytes": llama, "measured": held, "layer": layer},
        )
    )
    return out


def per_param_table() -> dict:
    return {p: {**per_param_bytes(p), "total": sum(per_param_bytes(p).values())} for p in PER_PARAM}


@lesson
def memory(
    model: str = "llama-2-7b",
    context: int = 2048,
    batch: int = 1,
    dtype: str = "fp16",
    layers: int = 0,
    d_model: int = 0,
    heads: int = 0,
    kv_heads: int = 0,
    d_ff: int = 0,
    vocab: int = 0,
    gated: bool = False,
    lab_kv_heads: int = 2,
    *,
    lang: str = "zh",
) -> MemoryResult:
    """The lab's model measured against the formulas, then the published models and a typed one sized."""
    p = check(
        PARAMS,
        dict(
            model=model,
            context=context,
            batch=batch,
            dtype=dtype,
            layers=layers,
            d_model=d_model,
            heads=heads,
            kv_heads=kv_heads,
            d_ff=d_ff,
            vocab=vocab,
            gated=gated,
            lab_kv_heads=lab_kv_heads,
        ),
    )
    mine = typed(p)
    rows = [entry(m.name, m.architecture, p["context"], p["batch"], p["dtype"]) for m in PUBLISHED]
    chosen = (
        entry(t("explain.memory.yours", lang), mine, p["context"], p["batch"], p["dtype"])
        if mine is not None
        else rows[list(MODELS).index(p["model"])]
    )
    with seeded(0):  # the caller's random state is left as it was
        lab, measured, formula, step = measure_lab(p["lab_kv_heads"])
    per_param = per_param_table()
    return MemoryResult(
        "memory",
        p,
        per_param,
        chosen,
        chosen.kv_cache_bytes,
        rows,
        lab,
        measured,
        formula,
        {part: measured[part] - formula[part] for part in measured},
        {**step.moments, "peak": step.peak},
        step.cuda_peak,
        list(CARDS_GB),
        filling(chosen),
        claims_for(measured, formula, lab, per_param, lang),
    )

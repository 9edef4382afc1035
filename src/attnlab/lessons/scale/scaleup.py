"""How much bigger: the course says parameters, data and compute all grew "上亿倍" (by 10⁸ or more) from a model
a learner trains to the chat models. Counted here, each side by the lab: the 静夜思 model `attnlab train` makes
with its defaults (its parameters summed, the tokens its steps read drawn by train/data.get_batch), against the
published model whose training took the most compute, at its published training tokens. Compute is 6·N·D on
both sides (forward and backward, weights only), so the ratio compares like with like."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.models import preset
from attnlab.text.corpus import read_corpus
from attnlab.text.tokenizer import train_tokenizer
from attnlab.train.data import TokenData, get_batch
from attnlab.train.loop import TrainConfig
from attnlab.train.run import DEFAULTS
from attnlab.train.size import estimate_size

LAB_CORPUS = "jingyesi"  # the built-in poem /pipeline trains on
BAR = 1e8  # 上亿倍: a hundred million times


@dataclass
class Ratio:
    what: str  # params | data | compute
    lab: float  # the lab's 静夜思 model
    big: float  # the published model
    times: float  # big / lab
    reaches: bool  # times >= BAR


@dataclass
class ScaleUp:
    lab_steps: int  # the 静夜思 model's default training steps
    big: str  # the published model compared (the most training compute of those with published tokens)
    bar: float
    ratios: list[Ratio]


def lab_model() -> tuple[int, int, int]:
    """(parameters, tokens read in training, steps) of the 静夜思 model `attnlab train` makes by default."""
    name, settings = DEFAULTS[LAB_CORPUS]
    cfg = TrainConfig(**settings)
    texts = read_corpus(LAB_CORPUS)
    tok = train_tokenizer("char", texts)
    model_cfg = preset(name, vocab_size=tok.vocab_size)
    n = estimate_size(model_cfg, cfg.batch_size).parameters  # every parameter, summed
    stream = TokenData.from_texts(texts, tok, val_fraction=0.0).train
    x, _ = get_batch(stream, model_cfg.context_length, cfg.batch_size, torch.Generator().manual_seed(0))  # (B, T)
    return n, cfg.steps * x.numel(), cfg.steps


def scale_up(rows) -> ScaleUp:
    """The three ratios against the published row (scale's Row) with the most 6·N·D."""
    big = max((r for r in rows if r.train_flops_6nd), key=lambda r: r.train_flops_6nd)
    n, d, steps = lab_model()
    pairs = {"params": (n, big.counted), "data": (d, big.tokens), "compute": (6 * n * d, big.train_flops_6nd)}
    ratios = [Ratio(what, lab, other, other / lab, other / lab >= BAR) for what, (lab, other) in pairs.items()]
    return ScaleUp(steps, big.name, BAR, ratios)

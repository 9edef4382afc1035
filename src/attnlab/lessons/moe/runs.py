"""The four runs behind `attnlab explain moe`: a mixture-of-experts GPT, the same MoE trained without the balancing
loss, a dense GPT whose FFN is one expert (equal ACTIVE parameters: what a token runs through) and a dense GPT whose
FFN is as wide as all the experts together (equal TOTAL parameters). Same seed, same batches, same steps, same
learning-rate schedule; each measured on the same evaluation windows at the end.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import torch
import torch.nn.functional as F

from attnlab.train import progress
from attnlab.train.data import TextData, eval_windows, text_data

BATCH, LR, WARMUP = 16, 1e-2, 10
MAX_CHARS = 4000  # a corpus file is cut to its first characters: the lesson stays seconds on a laptop CPU
BASE = dict(context_length=8, d_model=32, n_heads=2, n_layers=2, norm_first=True, activation="relu")
MODELS = ("moe", "moe_free", "dense_active", "dense_total")  # as the training progress names them
TOP_CHARS = 5  # characters listed per expert


Data = TextData  # name, train, val (the ids the loss is measured on), held_out, vocab_size, tokenizer


@lru_cache(maxsize=8)
def corpus_data(name: str) -> Data:
    """A built-in poem whole (its loss is measured on the poem itself: 24 characters leave nothing to hold out), or
    a file's first MAX_CHARS characters with its last tenth held out."""
    least = BASE["context_length"] + 2  # a whole window and its target, on each side
    data = text_data(name, MAX_CHARS, least)
    if data.held_out and len(data.train) < least:  # then the held-out part is `least` long
        raise ValueError(f"{name!r} is too short: it needs at least {2 * least} characters")
    return data


def configs(data: Data, n_experts: int, top_k: int, capacity_factor: float, balance: float, d_ff: int) -> dict:
    """The four models' configurations: the MoE's experts each have hidden width d_ff; dense_active's one FFN too
    (the MoE's active parameters, less its router), dense_total's n_experts · d_ff (its total, less the router and
    n_experts − 1 output biases)."""
    from attnlab.models import GPTConfig

    base = {**BASE, "vocab_size": data.vocab_size}
    moe = dict(ffn="moe", n_experts=n_experts, top_k=top_k, capacity_factor=capacity_factor, d_ff=d_ff)
    return {
        "moe": GPTConfig(**base, **moe, balance_loss=balance),
        "moe_free": GPTConfig(**base, **moe, balance_loss=0.0),
        "dense_active": GPTConfig(**base, d_ff=top_k * d_ff),
        "dense_total": GPTConfig(**base, d_ff=n_experts * d_ff),
    }


def train(config, data: Data, steps: int, seed: int, name: str, span: tuple[int, int] | None = None):
    """AdamW on cross-entropy + balance_loss · aux (aux: the MoE layers' E · Σ f_i P_i), the lab's cosine schedule;
    the weights drawn from the seed alone (redraw), the batches from a generator of their own. Returns the model
    and the cross-entropy of each step (the balancing term is left out of what is reported). `span`: (steps done
    before, steps in all) of the progress bar `name` when it counts several trainings."""
    from attnlab.lessons.common.weights import redraw
    from attnlab.models import GPT
    from attnlab.train.data import get_batch
    from attnlab.train.loop import TrainConfig
    from attnlab.train.small import train_small

    before, total = span or (0, steps)
    model = redraw(GPT(config), seed)
    cfg = TrainConfig(steps=max(1, steps), batch_size=BATCH, lr=LR, warmup_steps=min(WARMUP, steps), seed=seed)

    def batch(g):  # (B, T) each: the same batches for every model
        return get_batch(data.train, config.context_length, BATCH, g)

    losses = train_small(
        model,
        cfg,
        batch,
        steps=steps,
        penalty=lambda m: None if m.aux_loss is None else config.balance_loss * m.aux_loss,  # dense: None
        on_step=lambda step: progress.report(name, before + step, total),
    )  # stops when the page has gone
    model.eval()
    return model, losses


@dataclass
class Routing:
    tokens_per_expert: list[list[int]]  # [layer][expert]: choices the router sent there on the evaluation windows
    share: list[list[float]]  # the same as fractions of the layer's choices
    dropped: list[int]  # [layer] choices past an expert's capacity
    balance: list[float]  # [layer] E · Σ f_i P_i on the evaluation windows (1: perfectly even)
    chars: list[list[list[dict]]]  # [layer][expert] the TOP_CHARS characters it takes most: {char, count, share}


def shown(tok, c: int) -> str:
    """A character as the tables print it: the end-of-text mark ␃, a line break ⏎, a space ␣."""
    return "␃" if c == tok.eot_id else {"\n": "⏎", " ": "␣"}.get(tok.decode([c]), tok.decode([c]))


@torch.no_grad()
def evaluate(model, data: Data) -> tuple[float, Routing | None]:
    """Cross-entropy on the evaluation windows, and for a MoE where each layer sent each character read there."""
    from attnlab.nn.moe import moe_layers

    x, y = eval_windows(data.val, model.config.context_length)  # (W, T) each: the same for every model
    logits = model(x)  # (W, T, V): one forward, so every MoE layer holds this batch's routing
    loss = float(F.cross_entropy(logits.flatten(0, 1), y.flatten()))
    layers = moe_layers(model)
    if not layers:
        return loss, None
    tok, read = data.tokenizer, x.flatten().tolist()  # the character each position reads
    counts, shares, dropped, balance, chars = [], [], [], [], []
    for layer in layers:
        n = layer.tokens_per_expert.tolist()
        counts.append(n)
        shares.append([c / max(1, sum(n)) for c in n])
        dropped.append(layer.dropped)
        balance.append(float(layer.aux_loss))
        choice = layer.choice.reshape(len(read), -1).tolist()  # (W·T, k)
        total = Counter(read)
        per_expert = [Counter() for _ in n]
        for ch, experts in zip(read, choice):
            for e in experts:
                per_expert[e][ch] += 1
        chars.append(
            [
                [
                    {"char": shown(tok, c), "count": k, "share": k / total[c]}
                    for c, k in sorted(pe.items(), key=lambda item: (-item[1], item[0]))[:TOP_CHARS]
                ]
                for pe in per_expert
            ]
        )
    return loss, Routing(counts, shares, dropped, balance, chars)

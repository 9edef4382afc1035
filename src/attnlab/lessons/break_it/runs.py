"""The paired runs behind `attnlab explain break`: one intact and one ablated small GPT, the same seed, the same
initial weights where both have them, the same batches; losses measured along the way, greedy text at the end.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch
import torch.nn.functional as F

from attnlab.lessons.common.params import seeded
from attnlab.train import progress
from attnlab.train.data import eval_windows

STEPS, MIN_STEPS, MAX_STEPS = 80, 40, 120  # training steps of each run: the default and the form's range
N_POINTS = 11  # loss measurements along a run (step 0 included)
BATCH = 16
LR = 1e-2  # as the lab trains the poems
MAX_CHARS = 4000  # a corpus file is cut to its first characters: each run stays a few seconds on a laptop CPU
BASE = dict(context_length=8, d_model=32, n_heads=4, n_layers=2, norm_first=False, activation="relu")
# Where an ablation only shows at another size, both runs of its pair take that size.
SETUP = {
    # one head of width d_k = d_model = 64, eight times the base's d_k of 8: there the unscaled scores' spread
    # (√d_k = 8 times the scaled ones') saturates the softmax (measured: attn_peak)
    "no-scale": dict(n_heads=1, d_model=64),
    "no-residual": dict(n_layers=4),  # a deeper stack, where the residual path is meant to matter
    # a context of 16: with more to gather, where the gathering sits against the thinking shows on the essay's
    # held-out tenth (README: break it); at context 8 the difference is within the noise of 3 seeds
    "ffn-first": dict(context_length=16),
}
DEFAULT_CORPUS = {"ffn-first": "essay"}  # an empty corpus: the ablation's own text, else 静夜思
LESSON_TEXTS = ("essay",)  # the lesson's own texts (break_it/essay.py): held out like a file
MODELS = ("intact", "ablated")  # the models of a pair, as the training progress names them (explain.break_it.model.*)


@dataclass(frozen=True)
class Data:
    name: str  # the corpus as given
    train: torch.Tensor  # (N_train,) token ids
    val: torch.Tensor  # (N_val,) ids the causal loss is measured on (the train ids again for a built-in poem)
    held_out: bool
    vocab_size: int
    prompt: str
    reference: str  # the text after the prompt, as far as greedy writes
    tokenizer: object


@dataclass
class History:
    steps_at: list[int]
    train_loss: list[float]  # measured as the model trains (its ablation on)
    causal_loss: list[float]  # measured with the causal mask on, as a decoder generates
    attn_peak: list[float]  # the mean largest attention weight of a query (1: all on one key); [] without attention
    greedy: str
    seconds: float


@dataclass
class Pair:
    seed: int
    intact: History
    ablated: History
    same_start: float  # largest |difference| between the two models' shared initial parameters (0: same start)


@lru_cache(maxsize=8)
def corpus_data(name: str, shuffle: bool = False) -> Data:
    """The corpus as token ids: a built-in poem whole (causal loss on the poem itself), or the lesson's essay or a
    file's first MAX_CHARS characters with its last tenth held out. With `shuffle` the models train on the same
    characters in a random order (the null of what training learned); the causal loss is still measured on the
    real text."""
    from attnlab.text.builtin import BUILTIN_TEXTS
    from attnlab.train.data import char_stream, last_tenth, named_text

    if not name:
        raise ValueError("give a built-in text (jingyesi, poem, essay) or a corpus file")
    try:
        is_file = Path(name).is_file()
    except OSError:  # a name too long to be a path, say
        is_file = False
    if name not in BUILTIN_TEXTS and name not in LESSON_TEXTS and not is_file:
        raise ValueError(f"{name!r} is neither a built-in text {sorted(BUILTIN_TEXTS) + list(LESSON_TEXTS)} nor a file")
    if name == "essay":
        from attnlab.lessons.break_it.essay import ESSAY

        text = ESSAY[:MAX_CHARS]
    else:
        text = named_text(name, MAX_CHARS)
    tok, ids = char_stream(text)  # (N,)
    held_out = name not in BUILTIN_TEXTS  # the essay and files: their last tenth
    if held_out:
        train, val = last_tenth(ids, BASE["context_length"] + 2)
    else:
        train = val = ids
    if shuffle:  # every count kept, every order gone (one fixed draw: each seed trains on the same stream)
        train = train[torch.randperm(len(train), generator=torch.Generator().manual_seed(0))]  # (N_train,)
    shown = text if not held_out else text[: 4 * BASE["context_length"]]
    return Data(name, train, val, held_out, tok.vocab_size, shown[0], shown[1 : 2 * BASE["context_length"]], tok)


def setup_of(ablation: str, data: Data) -> dict:
    return {**BASE, **SETUP.get(ablation, {}), "vocab_size": data.vocab_size}


@torch.no_grad()
def loss_on(model, x, y, causal: bool | None) -> float:
    logits = model(x, causal=causal)  # (W, T, V)
    return float(F.cross_entropy(logits.flatten(0, 1), y.flatten()))


@torch.no_grad()
def attn_peak(model, x) -> float | None:
    """How saturated the model's softmax is: the largest attention weight of each query, averaged over layers,
    heads, windows and queries (the first query has one key, so it is left out). Uniform weights over t keys
    give the mean of 1/t for t = 2..T under the mask; one-hot weights give 1. None: the model has no attention.
    (A forward pass of its own: recording takes the unfused path, and the losses stay on the fused one.)"""
    rec: dict = {}
    model(x, record=lambda name, v: rec.__setitem__(name, v) if name.endswith("attn.weights") else None)
    peaks = [float(w[..., 1:, :].amax(-1).mean()) for w in rec.values()]  # each w: (W, H, T, T)
    return sum(peaks) / len(peaks) if peaks else None


@torch.no_grad()
def greedy(model, data: Data) -> str:
    """Continue the prompt token by token with the model as it is (its ablation on), each step reading its own
    previous outputs; as many tokens as the reference has."""
    tok = data.tokenizer
    ids = torch.tensor([tok.encode(data.prompt)])  # (1, t)
    T = model.config.context_length
    for _ in range(len(tok.encode(data.reference))):
        logits = model(ids[:, -T:])  # (1, t, V)
        ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    return tok.decode(ids[0, 1:].tolist())


def adamw(model, cfg):
    """The lab's AdamW (no weight decay here, so one group), fused where torch can (2.4+ on a CPU): less time
    a step."""
    kw = dict(lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), weight_decay=0.0)
    try:
        return torch.optim.AdamW(model.parameters(), fused=True, **kw)
    except (RuntimeError, TypeError):
        return torch.optim.AdamW(model.parameters(), **kw)


_here = threading.local()  # (steps already done, steps in all) of the seeds a pairs() call trains, for the progress


def _report(name: str, step: int, steps: int) -> None:
    """progress.report across the seeds: a model's bar runs over every seed's steps."""
    done, total = getattr(_here, "span", None) or (0, steps)
    progress.report(name, done + step, total)


def train(model, data: Data, steps: int, seed: int, name: str) -> History:
    from attnlab.train.data import get_batch
    from attnlab.train.loop import TrainConfig
    from attnlab.train.small import train_small

    start = time.perf_counter()
    cfg = TrainConfig(
        steps=steps, batch_size=BATCH, lr=LR, warmup_steps=10, weight_decay=0.0, min_lr_ratio=0.1, seed=seed
    )
    T = model.config.context_length
    train_x, train_y = eval_windows(data.train, T)  # (W, T) each: the same for every measurement
    val_x, val_y = eval_windows(data.val, T)
    at = sorted({round(i * steps / (N_POINTS - 1)) for i in range(N_POINTS)})  # the last is `steps`
    h = History(at, [], [], [], "", 0.0)

    def on_step(step: int) -> None:
        _report(name, step, steps)  # the page shows it while the model trains; stops here when it has gone
        if step in at:
            model.eval()
            h.train_loss.append(loss_on(model, train_x, train_y, None))
            peak = attn_peak(model, train_x)
            if peak is not None:
                h.attn_peak.append(peak)
            h.causal_loss.append(loss_on(model, val_x, val_y, True))
            model.train()

    # the same batches for both models of a pair (the generator is seeded from cfg.seed)
    train_small(model, cfg, lambda g: get_batch(data.train, T, BATCH, g), optimizer=adamw(model, cfg), on_step=on_step)
    model.eval()
    h.greedy = greedy(model, data)
    h.seconds = time.perf_counter() - start
    return h


def pairs(ablation: str, corpus: str, steps: int, seeds: int, shuffle: bool = False) -> list[Pair]:
    """paired() for seeds 0 .. seeds - 1, each model's progress running over every seed's steps."""
    total = steps * seeds
    for name in MODELS:
        progress.report(name, 0, total)  # both models listed from the start
    out = []
    try:
        for seed in range(seeds):
            _here.span = (seed * steps, total)
            out.append(paired(ablation, corpus, steps, seed, shuffle=shuffle))
            for name in MODELS:
                progress.report(name, (seed + 1) * steps, total)  # a run found in a cache counts as done too
    finally:
        _here.span = None
    return out


@lru_cache(maxsize=256)
def paired(ablation: str, corpus: str, steps: int, seed: int, shuffle: bool = False) -> Pair:
    """Train the intact and the ablated model of one seed (cached), on the corpus or its characters shuffled."""
    data = corpus_data(corpus, shuffle)
    intact, ablated = _pair_models(ablation, data, seed)
    same = same_start(intact, ablated)
    return Pair(
        seed,
        _intact(ablation, corpus, steps, seed, intact, shuffle),
        train(ablated, data, steps, seed, "ablated"),
        same,
    )


_intact_cache: dict = {}


def _intact(ablation: str, corpus: str, steps: int, seed: int, model, shuffle: bool = False) -> History:
    # Ablations with the base sizes share one intact run per seed (its weights and batches are the same).
    key = (tuple(sorted(SETUP.get(ablation, {}).items())), corpus, steps, seed, shuffle)
    if key not in _intact_cache:
        _intact_cache[key] = train(model, corpus_data(corpus, shuffle), steps, seed, "intact")
    return _intact_cache[key]


def _pair_models(ablation: str, data: Data, seed: int):
    intact = _build_sized(ablation, data, seed, ())
    ablated = _build_sized(ablation, data, seed, (ablation,))
    shared = {
        k: v
        for k, v in intact.state_dict().items()
        if k in ablated.state_dict() and ablated.state_dict()[k].shape == v.shape
    }
    ablated.load_state_dict(shared, strict=False)  # the same start wherever both models have the parameter
    return intact, ablated


def _build_sized(ablation: str, data: Data, seed: int, ablations: tuple):
    from attnlab.models.gpt import GPT, GPTConfig

    with seeded(seed):
        return GPT(GPTConfig(**setup_of(ablation, data), ablations=ablations))


def same_start(a, b) -> float:
    sa, sb = a.state_dict(), b.state_dict()
    diffs = [float((sa[k] - sb[k]).abs().max()) for k in sa if k in sb and sa[k].shape == sb[k].shape]
    return max(diffs) if diffs else math.nan

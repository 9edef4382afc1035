"""The model the `patching` lesson looks inside: a small pre-LN GPT trained on the built-in 静夜思 (or a file's first
MAX_CHARS characters), the same model untrained (the same seed, no step taken) beside it, and the twins of the
seed count: at each of several seeds the model trained on the text and on the same characters shuffled.

All are cached per setting, so the page, its figure and the API read one model, not three retrained ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch

from attnlab.train import progress

BATCH, LR, WARMUP = 16, 1e-2, 10
MAX_CHARS = 4000  # a corpus file is cut to its first characters: the lesson stays seconds on a laptop CPU
CONTEXT, D_MODEL = 8, 32  # the longest prompt, and the width (d_k = D_MODEL / heads)
NAMES = (
    "trained",
    "seeds",
    "measure",
)  # the progress (explain.patching.model.*): training, the seed count, the readings


@dataclass(frozen=True)
class Data:
    name: str  # "静夜思" or the file's name
    text: str  # what the model trains on
    ids: torch.Tensor  # (N,) token ids of the text (an end-of-text mark after it)
    tokenizer: object


@lru_cache(maxsize=8)
def corpus_data(corpus: str) -> Data:
    """The built-in 静夜思 (empty corpus) or a .txt / chinese-poetry .json file's first MAX_CHARS characters."""
    from attnlab.train.data import char_stream, poem_or_file

    name, text = poem_or_file(corpus, MAX_CHARS)
    if len(text) < 4:
        raise ValueError(f"{corpus!r} is too short: it needs at least 4 characters")
    tok, ids = char_stream(text)  # (N,)
    return Data(name, text, ids, tok)


def config(data: Data, n_layers: int, n_heads: int):
    from attnlab.models.gpt import GPTConfig

    return GPTConfig(
        vocab_size=data.tokenizer.vocab_size,
        context_length=CONTEXT,
        d_model=D_MODEL,
        n_heads=n_heads,
        n_layers=n_layers,
        norm_first=True,
        activation="relu",
    )


@lru_cache(maxsize=8)
def train_ids(corpus: str, shuffle: bool, seed: int) -> torch.Tensor:
    """What the model trains on: the text's ids, or (`shuffle`, the null) the same characters in a random order,
    drawn from `seed`, read by the same tokenizer: every character's count kept, every order gone."""
    from attnlab.text import shuffled_chars
    from attnlab.train.token_cache import token_stream

    data = corpus_data(corpus)
    if not shuffle:
        return data.ids
    return token_stream(shuffled_chars([data.text], seed), data.tokenizer)  # (N,)


def train(corpus: str, n_layers: int, n_heads: int, steps: int, seed: int, shuffle: bool, on_step):
    """(trained, untrained, losses): one GPT drawn from `seed` (lessons/common/weights.redraw), trained `steps` AdamW
    steps on cross-entropy with the lab's warm-up and cosine schedule (on the text, or with `shuffle` on its
    characters shuffled), and an untouched copy of its start. on_step(step) may raise to stop it."""
    from attnlab.lessons.common.weights import redraw
    from attnlab.models.gpt import GPT
    from attnlab.train.data import get_batch
    from attnlab.train.loop import TrainConfig
    from attnlab.train.small import train_small

    data = corpus_data(corpus)
    ids = train_ids(corpus, shuffle, seed)  # (N,)
    model = redraw(GPT(config(data, n_layers, n_heads)), seed)
    untrained = redraw(GPT(config(data, n_layers, n_heads)), seed).eval()  # the same start, never trained
    cfg = TrainConfig(steps=max(1, steps), batch_size=BATCH, lr=LR, warmup_steps=min(WARMUP, steps), seed=seed)
    losses = train_small(model, cfg, lambda g: get_batch(ids, CONTEXT, BATCH, g), steps=steps, on_step=on_step)
    return model.eval(), untrained, losses


@lru_cache(maxsize=8)
def models(corpus: str, n_layers: int, n_heads: int, steps: int, seed: int):
    """The lesson's model on the text, its untrained start, and its losses; its training shows on the page."""
    report = lambda step: progress.report("trained", step, steps)  # noqa: E731 (stops when the page has gone)
    return train(corpus, n_layers, n_heads, steps, seed, False, report)


@lru_cache(maxsize=32)
def twin(corpus: str, n_layers: int, n_heads: int, steps: int, seed: int, shuffle: bool):
    """A model of the seed count (lessons/patching/seeds.py), trained on the text or on its characters shuffled;
    its progress is the seed count's, so it only checks whether to stop."""
    return train(corpus, n_layers, n_heads, steps, seed, shuffle, lambda step: progress.check())[0]

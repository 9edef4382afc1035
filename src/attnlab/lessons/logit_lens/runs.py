"""The model behind `attnlab explain logit-lens`: a small pre-LN GPT trained on 静夜思 (or a corpus file's first
characters), and the same GPT at the same seed left untrained; with `shuffle` (the null) the GPT trains on the
same characters in a random order instead. Trained models are kept per (text, layers, steps, seed, shuffle), so the
page, its figure and the API (and another prompt) share one training run.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache

import torch

from attnlab.train import progress

BATCH, LR, WARMUP = 16, 1e-2, 10
MAX_CHARS = 4000  # a corpus file is cut to its first characters: the lesson stays seconds on a laptop CPU
# context 32 holds the whole of 静夜思 (24 characters and the end mark): every batch is the poem from position 0
BASE = dict(context_length=32, d_model=32, n_heads=2, norm_first=True, activation="relu")
KEEP = 4  # trained models kept (a few MB each at most)


@dataclass(frozen=True)
class Data:
    name: str  # "静夜思" or the file's name
    text: str  # what the model trains on
    stream: torch.Tensor  # (N,) token ids: the text and its end mark
    tokenizer: object


@lru_cache(maxsize=8)
def corpus_data(corpus: str) -> Data:
    """The built-in 静夜思 (corpus ""), or a .txt / chinese-poetry .json file's first MAX_CHARS characters."""
    from attnlab.train.data import char_stream, poem_or_file

    name, text = poem_or_file(corpus, MAX_CHARS)
    if corpus and len(text) < 4:
        raise ValueError(f"the corpus {corpus!r} holds too little text to train on")
    tok, ids = char_stream(text)  # (N,)
    return Data(name, text, ids, tok)


def config(data: Data, n_layers: int):
    from attnlab.models import GPTConfig

    return GPTConfig(**BASE, vocab_size=data.tokenizer.vocab_size, n_layers=n_layers)


def untrained(data: Data, n_layers: int, seed: int):
    """The GPT as it starts: the weights drawn from the seed alone (the trained model's starting point)."""
    from attnlab.lessons.common.weights import redraw
    from attnlab.models import GPT

    return redraw(GPT(config(data, n_layers)), seed).eval()


_kept: OrderedDict = OrderedDict()
_lock = threading.Lock()


def stream_of(data: Data, shuffle: bool, seed: int) -> torch.Tensor:
    """What the GPT trains on: the text's ids, or the same characters shuffled (drawn from the seed), one tokenizer."""
    from attnlab.text import shuffled_chars
    from attnlab.train.token_cache import token_stream

    return token_stream(shuffled_chars([data.text], seed), data.tokenizer) if shuffle else data.stream  # (N,)


def trained(data: Data, n_layers: int, steps: int, seed: int, shuffle: bool = False):
    """(model, the training batch's cross-entropy at each step): AdamW on cross-entropy, the lab's cosine schedule,
    batches from a generator of their own. steps = 0 is the untrained model itself."""
    key = (data.name, data.text, n_layers, steps, seed, shuffle)
    with _lock:
        if key in _kept:
            _kept.move_to_end(key)
            return _kept[key]
    found = _train(data, n_layers, steps, seed, stream_of(data, shuffle, seed))
    with _lock:
        _kept[key] = found
        while len(_kept) > KEEP:
            _kept.popitem(last=False)
    return found


def _train(data: Data, n_layers: int, steps: int, seed: int, stream: torch.Tensor):
    from attnlab.train.data import get_batch
    from attnlab.train.loop import TrainConfig
    from attnlab.train.small import train_small

    model = untrained(data, n_layers, seed)
    cfg = TrainConfig(steps=max(1, steps), batch_size=BATCH, lr=LR, warmup_steps=min(WARMUP, max(1, steps)), seed=seed)
    T = model.config.context_length
    # (B, T), (B, T): the whole poem when it fits one window
    losses = train_small(
        model,
        cfg,
        lambda g: get_batch(stream, T, BATCH, g),
        steps=steps,
        on_step=lambda step: progress.report("trained", step, steps),
    )  # stops when the page has gone
    model.eval()
    return model, losses

"""The text and the two models behind `attnlab explain word2vec`: a skip-gram (attnlab.models.word2vec) and, for
comparison, a one-layer character GPT (attnlab.models.gpt) trained on the same characters; both in float64, both
drawn from the seed alone, both reporting their steps to the page."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np
import torch

from attnlab.lessons.common.params import ParamError
from attnlab.train import progress

MAX_CHARS = 300_000  # a corpus file is cut to its first characters (全唐诗's slices are ~300k each)
GPT_D, GPT_CONTEXT, GPT_BATCH, GPT_LR = 32, 16, 16, 3e-3  # the comparison GPT: one layer, two heads


@dataclass(frozen=True)
class Text:
    name: str
    tokenizer: object  # attnlab.text.CharTokenizer
    ids: torch.Tensor  # (N,) the stream: every text, then the end-of-text mark
    train_ids: torch.Tensor  # (N,) what the models train on: `ids`, or `null_ids` (with `shuffle`)
    null_ids: torch.Tensor  # (N,) the same characters shuffled, each text keeping its length: the twins train on it
    counts: torch.Tensor  # (V,) occurrences of each character in `ids` (0 for the end-of-text mark)


def read(corpus: str, shuffle: bool, seed: int) -> Text:
    """The built-in 静夜思 (corpus ''), or a .txt or chinese-poetry .json file's first MAX_CHARS characters; with
    `shuffle` the models train on the same characters in a random order, where a context says nothing (their
    twins, the claims' control, always do)."""
    from pathlib import Path

    from attnlab.text import JINGYESI, CharTokenizer, read_corpus, shuffled_chars
    from attnlab.train.data import check_corpus
    from attnlab.train.token_cache import token_stream

    path = corpus.strip()
    if not path:
        texts, name = [JINGYESI], "静夜思"
    else:
        try:
            check_corpus(path)  # a regular file within the size limit: a FIFO would block forever
            texts, name = read_corpus(path), Path(path).name
        except (ValueError, OSError) as err:
            raise ParamError(str(err), "corpus", "explain.error.corpus", corpus=corpus[:80]) from None
        kept, total = [], 0
        for text in texts:  # whole texts until MAX_CHARS
            if total + len(text) > MAX_CHARS and kept:
                break
            kept.append(text[:MAX_CHARS])
            total += len(kept[-1])
        texts = kept
    tok = CharTokenizer.train(texts)
    ids = token_stream(texts, tok)  # (N,)
    counts = torch.bincount(ids, minlength=tok.vocab_size)  # (V,)
    counts[tok.eot_id] = 0  # the mark between texts is never a centre, a context or a negative
    null_ids = token_stream(shuffled_chars(texts, seed + 1), tok)  # (N,) the same counts, no order
    return Text(name, tok, ids, null_ids if shuffle else ids, null_ids, counts)


def is_word(ch: str) -> bool:
    """A character the lesson compares: not punctuation, a space, a line break or a control character."""
    return len(ch) == 1 and not unicodedata.category(ch).startswith(("P", "Z", "C"))


def frequent(text: Text, n: int) -> list[int]:
    """The ids of the n most frequent characters that are words (ties in id order)."""
    counts = text.counts.numpy()
    tok = text.tokenizer
    return [
        int(i)
        for i in np.argsort(-counts, kind="stable")
        if counts[i] > 0 and i != tok.eot_id and is_word(tok.token(int(i)))
    ][:n]


def train_skipgram(
    text: Text,
    ids: torch.Tensor,
    d: int,
    window: int,
    k: int,
    steps: int,
    batch: int,
    lr: float,
    hand: bool,
    seed: int,
    name: str = "word2vec",
):
    """The skip-gram trained on `ids` (N,), one of `text`'s streams, its progress reported as `name`: (model, W_in
    at the start, losses, the pairs, the noise). The noise is drawn from the counts, which shuffling keeps."""
    from attnlab.models.word2vec import SkipGram, noise_distribution, pairs, train

    g = torch.Generator().manual_seed(seed)
    model = SkipGram(text.tokenizer.vocab_size, d, generator=g)
    start = model.W_in.detach().clone()  # (V, d)
    center, context = pairs(ids, window, skip=text.tokenizer.eot_id)  # (P,) each
    if len(center) == 0:
        raise ParamError(
            f"the corpus {text.name} has no pair of characters to train on",
            "corpus",
            "explain.error.corpus",
            corpus=text.name,
        )
    noise = noise_distribution(text.counts)  # (V,)
    progress.report(name, 0, steps)
    losses = train(
        model,
        center,
        context,
        noise,
        steps=steps,
        batch=batch,
        k=k,
        lr=lr,
        generator=g,
        hand=hand,
        on_step=lambda s, n: progress.report(name, s, n),
    )
    return model, start, losses, (center, context), noise


def train_gpt(
    text: Text, ids: torch.Tensor, steps: int, seed: int, name: str = "gpt"
) -> tuple[torch.Tensor, torch.Tensor, list[float]]:
    """A one-layer character GPT trained `steps` AdamW steps on `ids` (N,), its progress reported as `name`: (its
    token embedding trained, at the start, the losses)."""
    from attnlab.lessons.common.weights import redraw
    from attnlab.models import GPT, GPTConfig
    from attnlab.train.data import get_batch
    from attnlab.train.loop import TrainConfig
    from attnlab.train.small import train_small

    config = GPTConfig(
        vocab_size=text.tokenizer.vocab_size, n_layers=1, d_model=GPT_D, n_heads=2, context_length=GPT_CONTEXT
    )
    model = redraw(GPT(config), seed).double()
    start = model.embed.tok.weight.detach().clone()  # (V, d)
    cfg = TrainConfig(steps=max(1, steps), lr=GPT_LR, schedule="constant", grad_clip=None, seed=seed)
    # torch's AdamW with its own defaults; lm_loss reads the float64 logits in float32
    losses = train_small(
        model,
        cfg,
        lambda g: get_batch(ids, GPT_CONTEXT, GPT_BATCH, g),
        steps=steps,
        optimizer=torch.optim.AdamW(model.parameters(), lr=GPT_LR),  # (B, T) each
        on_step=lambda step: progress.report(name, step, steps),
    )
    return model.embed.tok.weight.detach().clone(), start, losses

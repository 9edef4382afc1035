"""The held-out side of the mlm lesson: every HOLD_EVERY-th text held out whole, the streams the models train on
and are read on, and the shortcut's other seeds (`left_pair`: the two left-only GPTs trained at one more seed and
compared as lesson.trained() compares them)."""

from __future__ import annotations

from functools import lru_cache

import torch

from attnlab.lessons.mlm.claims import PAIRS, lead_z
from attnlab.lessons.mlm.models import maskable, predict, targets, train_one

HOLD_EVERY = 5  # text k is held out when k % 5 == 4
MAX_SEEDS = 8  # the shortcut's count: seeds of the two left-only GPTs (each one more pair to train)


def split(poems: list[str]) -> tuple[list[str], list[str]]:
    """(train, held-out): by whole text, every HOLD_EVERY-th one held out."""
    return (
        [p for k, p in enumerate(poems) if k % HOLD_EVERY != HOLD_EVERY - 1],
        [p for k, p in enumerate(poems) if k % HOLD_EVERY == HOLD_EVERY - 1],
    )


def streams(poems: tuple[str, ...]):
    """(tokenizer, vocab with [MASK], the training stream (N,), the held-out stream (M,), the held-out targets'
    places in it, the ids a guess may be (V,) bool)."""
    from attnlab.text import CharTokenizer
    from attnlab.train.data import token_stream

    train, test = split(list(poems))
    tok = CharTokenizer.train(list(poems))  # every character has an id; a held-out-only one is never a training target
    vocab = tok.vocab_size + 1  # + [MASK], the last id
    train_stream = token_stream(train, tok)  # (N,) poem <eot> poem <eot> ...
    test_stream = torch.cat(
        [torch.tensor([tok.eot_id]), token_stream(test, tok)]
    )  # <eot> first: every poem follows one
    allowed = torch.tensor([maskable(tok.token(i)) if i < len(tok.chars) else False for i in range(vocab)])  # (V,)
    return tok, vocab, train_stream, test_stream, targets(test), allowed


@lru_cache(maxsize=32)
def left_pair(poems: tuple[str, ...], steps: int, d: int, context: int, seed: int) -> dict:
    """The shortcut at one more seed: the two left-only GPTs trained at `seed` and compared on the held-out
    characters as trained() compares them (cached)."""
    _, vocab, train_stream, test_stream, where, allowed = streams(poems)
    models = {k: train_one(k, train_stream, vocab, d, context, steps, seed, f"{k}_seeds")[0] for k in PAIRS[2][1:]}
    guesses, nll = predict(models, test_stream, where, vocab - 1, allowed, context)
    right = {k: (v == test_stream[where]).double() for k, v in guesses.items()}  # (n,) each
    a, b = PAIRS[2][1:]
    return {
        "seed": seed,
        "z_accuracy": lead_z(right[a] - right[b]),
        "z_loss": lead_z(nll[b] - nll[a]),
        **{k: float(v.mean()) if len(v) else None for k, v in right.items()},
    }

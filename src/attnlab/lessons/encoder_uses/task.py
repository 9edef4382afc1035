"""The encoder-uses lesson's couplets (attnlab.text.couplets), half of them with one wrong character, labelled by
construction: the lab knows which couplet is spoilt (a label for the whole line) and which character spoils it (a
label per character).

A spoilt couplet has one 下联 character swapped for another of the 40 that is not its 上联 character's pair:
天山红日高，地水绿雨低。 (月 would answer 日). A model linear in the character counts cannot tell the two kinds
apart: the wrong character is an ordinary one, and what it breaks is a pair, the characters at two positions five
apart (a rule that knows the 20 pairs could count which pair falls short; the encoder has to learn the pairs).
Training and test couplets are distinct couplets (no 上联 is in both).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from attnlab.text.couplets import CHARS, PARTNER, VERSE, couplets

N_TRAIN, N_TEST = 6000, 400
DATA_SEED = 1  # the text is fixed, like a corpus (the mlm lesson's couplets use seed 0)
VOCAB = (*CHARS, "，", "。")
ID = {ch: i for i, ch in enumerate(VOCAB)}
LENGTH = 2 * VERSE + 2  # 上联，下联。
SECOND = VERSE + 1  # where the 下联 starts


@dataclass(frozen=True)
class Example:
    text: str
    wrong: int | None  # the position of the wrong character, None for an intact couplet


def spoil(couplet: str, rng: random.Random) -> Example:
    """One 下联 character replaced by any other of the 40 but its pair."""
    at = SECOND + rng.randrange(VERSE)
    right = PARTNER[couplet[at - SECOND]]
    wrong = rng.choice([ch for ch in CHARS if ch != right])
    return Example(couplet[:at] + wrong + couplet[at + 1 :], at)


def examples() -> tuple[list[Example], list[Example]]:
    """(training, test): every other couplet spoilt at random, the same every time."""
    rng = random.Random(DATA_SEED)
    texts = couplets(N_TRAIN + N_TEST, DATA_SEED)
    out = [spoil(c, rng) if rng.random() < 0.5 else Example(c, None) for c in texts]
    return out[:N_TRAIN], out[N_TRAIN:]


def is_couplet(text: str) -> bool:
    """Five of the 40 characters, '，', five more, '。' (either verse may be spoilt)."""
    return (
        len(text) == LENGTH
        and text[VERSE] == "，"
        and text[-1] == "。"
        and all(ch in PARTNER for ch in text[:VERSE] + text[SECOND:-1])
    )


def wrong_positions(text: str) -> list[int]:
    """Where the 下联 does not answer the 上联 (what the tagger should find)."""
    return [SECOND + i for i in range(VERSE) if PARTNER[text[i]] != text[SECOND + i]]


def encode(batch: list[Example]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """-> ids (B, LENGTH), the couplet's label (B,): 1 = spoilt, and each character's (B, LENGTH): 1 = the wrong one."""
    ids = torch.tensor([[ID[ch] for ch in e.text] for e in batch])  # (B, L)
    spoilt = torch.tensor([int(e.wrong is not None) for e in batch])  # (B,)
    tags = torch.zeros(len(batch), LENGTH, dtype=torch.long)  # (B, L)
    for i, e in enumerate(batch):
        if e.wrong is not None:
            tags[i, e.wrong] = 1
    return ids, spoilt, tags

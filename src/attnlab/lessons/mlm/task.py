"""The mlm lesson's built-in text: generated couplets (对对子) whose answer is known, and where it lies.

A couplet here is two five-character verses, 上联，下联。 The 上联 is five characters drawn at random from
the 40 characters of PAIRS; the 下联 answers each one with its pair, character by character (天 -> 地,
山 -> 水 ...), as 对仗 does in a regulated poem's middle couplets:

    天山红日高，地水绿月低。

Hide a character of the 下联 and its pair sits five places to its left, in the 上联: a model reading from
the left can find it. Hide one of the 上联 and the characters on its left are random draws that say nothing
about it; its pair sits on its right, in the 下联. So a left-only model is at chance (1 in 40) on every 上联
character however well it is trained, and a model that reads both sides can get every character right.
That is the whole difference between a causal and a bidirectional model, with nothing else in the way.

The couplets themselves are attnlab.text.couplets' (shared with encoder-uses).
"""

from __future__ import annotations

from attnlab.text import couplets as text_couplets
from attnlab.text.couplets import CHARS, PAIRS, PARTNER, VERSE, answer

COUPLETS = "couplets"  # the corpus name of the built-in text
N_COUPLETS = 500
DATA_SEED = 0  # the text is the same for every model seed, like a corpus
EXAMPLE = "天?红日高，地水绿月低。"  # the learner's default blank: only the 下联's 水 says it is 山


def couplets(n: int = N_COUPLETS, seed: int = DATA_SEED) -> list[str]:
    """n distinct couplets "上联，下联。" with random 上联."""
    return text_couplets.couplets(n, seed)


__all__ = ["COUPLETS", "PAIRS", "PARTNER", "CHARS", "VERSE", "EXAMPLE", "N_COUPLETS", "answer", "couplets"]

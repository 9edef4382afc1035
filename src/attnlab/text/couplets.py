"""Generated couplets (对对子) from 40 characters in 20 对 pairs: the lab's own text, labelled by construction.

A couplet is two five-character verses, 上联，下联。 The 上联 is five characters drawn at random from CHARS; the
下联 answers each one with its pair, character by character (天 -> 地, 山 -> 水 ...), as 对仗 does in a regulated
poem's middle couplets: 天山红日高，地水绿月低。 The mlm lesson hides characters of them; encoder-uses
classifies and tags them.

The pairs are ordinary 对 pairs of primers like 声律启蒙 (天对地, 雨对风 ...), typed for the lab.
"""

from __future__ import annotations

import random

PAIRS = (
    "天地",
    "山水",
    "风雨",
    "日月",
    "春秋",
    "东西",
    "南北",
    "来去",
    "高低",
    "长短",
    "古今",
    "花草",
    "红绿",
    "冷暖",
    "明暗",
    "晴阴",
    "多少",
    "前后",
    "上下",
    "江海",
)
PARTNER = {a: b for a, b in PAIRS} | {b: a for a, b in PAIRS}
CHARS = tuple(PARTNER)  # 40 characters, each in one pair
VERSE = 5


def answer(first: str) -> str:
    """The 下联 of a 上联: each character's pair."""
    return "".join(PARTNER[ch] for ch in first)


def couplets(n: int, seed: int) -> list[str]:
    """n distinct couplets "上联，下联。" with random 上联, the same for the same seed."""
    rng = random.Random(seed)
    seen: dict[str, None] = {}
    while len(seen) < n:
        first = "".join(rng.choice(CHARS) for _ in range(VERSE))
        seen[f"{first}，{answer(first)}。"] = None
    return list(seen)


__all__ = ["PAIRS", "PARTNER", "CHARS", "VERSE", "answer", "couplets"]

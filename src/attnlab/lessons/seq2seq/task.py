"""The seq2seq lesson's generated translation task: Arabic digits -> Chinese numerals, with a known alignment.

    digits   2026 -> 二〇二六     target i reads source i              (monotonic, the diagonal)
    reverse  2026 -> 六二〇二     target i reads source n-1-i          (every word moves: the anti-diagonal)
    pairs    2026 -> 〇二六二     each pair of digits swapped         (local reordering, like adjective-noun order)

`align(task, n)[i]` is the source position target token i translates: the ground truth an attention map is
scored against. Train and test are split by example: a digit string is a test string when its CRC32 is
divisible by 5, and training never draws one.
"""

from __future__ import annotations

import zlib

import torch

TASKS = ("digits", "reverse", "pairs")
CHINESE = "〇一二三四五六七八九"
PAD, BOS, EOS = 0, 1, 2  # target specials; source ids are digit + 1 (0 is unused: no padding is needed)
SRC_VOCAB = 11
TGT_VOCAB = 3 + len(CHINESE)


def align(task: str, n: int) -> list[int]:
    """Source position of each of the n target tokens."""
    if task == "digits":
        return list(range(n))
    if task == "reverse":
        return [n - 1 - i for i in range(n)]
    if task == "pairs":
        return [i ^ 1 if (i ^ 1) < n else i for i in range(n)]  # 0<->1, 2<->3, ...; an odd last digit stays
    raise ValueError(f"task must be one of {TASKS}, got {task!r}")


def translate(task: str, digits: str) -> str:
    return "".join(CHINESE[int(digits[j])] for j in align(task, len(digits)))


def is_test(digits: str) -> bool:
    """The held-out fifth of all digit strings (fixed, whatever the seed)."""
    return zlib.crc32(digits.encode()) % 5 == 0


def sample(n: int, count: int, g: torch.Generator, *, test: bool) -> list[str]:
    """`count` random digit strings of length n from the test (or training) side of the split."""
    out: list[str] = []
    while len(out) < count:
        draw = torch.randint(0, 10, (2 * count + 8, n), generator=g).tolist()
        out += [s for s in ("".join(map(str, row)) for row in draw) if is_test(s) == test]
    return out[:count]


def encode(task: str, strings: list[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Strings of one length n -> src (B, n), tgt_in = [BOS, y_1..y_n] and tgt_out = [y_1..y_n, EOS], (B, n + 1)."""
    src = torch.tensor([[int(d) + 1 for d in s] for s in strings])  # (B, n)
    ys = torch.tensor([[3 + CHINESE.index(ch) for ch in translate(task, s)] for s in strings])  # (B, n)
    bos = torch.full((len(strings), 1), BOS)
    eos = torch.full((len(strings), 1), EOS)
    return src, torch.cat([bos, ys], 1), torch.cat([ys, eos], 1)


def decode_ids(ids: list[int]) -> str:
    """Target ids up to EOS -> Chinese numerals."""
    out = []
    for i in ids:
        if i == EOS:
            break
        out.append(CHINESE[i - 3] if i >= 3 else "?")
    return "".join(out)

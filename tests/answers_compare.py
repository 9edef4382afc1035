"""How a recorded answer is compared with today's (tests/test_same_answers.py).

A move of code must change no answer by a byte; but the last bits of a float depend on the CPU's kernels (AVX-512
or AVX2, Intel's or AMD's path through MKL), and training amplifies them. So the record keeps, beside the answers,
a fingerprint of the arithmetic it was made with (`probe()`: a tiny model trained a few steps, its weights hashed):
- same fingerprint: the same arithmetic, and every answer must be byte-identical (measured times aside);
- another fingerprint: an answer must have the same shape (keys, lengths, kinds of value), the same settings and
  the same claim ids; a lesson that computes without training must agree in its numbers within float32's
  rounding: relative 1e-4, or 1e-6 of the largest number of the array it sits in, or 1e-6 absolute (a residual
  such as "differs by 3e-8" is rounding itself), and a number the lesson rounded (0.089, or one a sentence
  prints) to one unit of its last digit;
  a lesson that trains is compared by shape only, since training turns a last-bit difference into another model
  (tried on the recording machine with ATEN_CPU_CAPABILITY=default and MKL_CBWR=COMPATIBLE: every answer of a
  lesson that does not train stays within these bounds; trained ones move by up to 80%).
"""

from __future__ import annotations

import hashlib
import json
import math
import re

REL, SCALE, FLOOR = 1e-4, 1e-6, 1e-6
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def probe() -> str:
    """A fingerprint of this machine's float arithmetic as the lessons use it: matmuls, softmax, LayerNorm and
    AdamW, one thread, in a few steps of a tiny GPT. Equal fingerprints: the same bits for the same program."""
    import torch

    from attnlab.io.threads import one_thread
    from attnlab.models import GPT, GPTConfig
    from attnlab.train.loop import TrainConfig, lm_loss, make_optimizer

    with one_thread():
        torch.manual_seed(0)
        model = GPT(GPTConfig(vocab_size=17, context_length=12, d_model=32, n_heads=4, n_layers=2))
        opt = make_optimizer(model, TrainConfig(lr=3e-3))
        g = torch.Generator().manual_seed(0)
        for _ in range(5):
            x = torch.randint(0, 17, (4, 12), generator=g)  # (B, T)
            loss = lm_loss(model, x[:, :-1], x[:, 1:])
            opt.zero_grad()
            loss.backward()
            opt.step()
        digest = hashlib.sha256()
        for p in model.parameters():
            digest.update(p.detach().numpy().tobytes())
    return digest.hexdigest()[:16]


def _numbers(obj) -> list[float]:
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return []
    if isinstance(obj, (int, float)):
        return [float(obj)] if math.isfinite(obj) else []
    values = obj.values() if isinstance(obj, dict) else obj
    return [x for v in values for x in _numbers(v)]


def _kind(x) -> str:
    return "bool" if isinstance(x, bool) else "number" if isinstance(x, (int, float)) or x is None else type(x).__name__


def differences(a, b, *, numbers: bool, scale: float, path: str = "") -> list[str]:
    """Where b differs from a: always in shape (keys, lengths, kinds); in numbers (and the numbers inside
    strings) beyond the tolerance only when `numbers`."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return [f"{path}: keys {sorted(set(a) ^ set(b))}"]
        return [d for k in a for d in differences(a[k], b[k], numbers=numbers, scale=0.0, path=f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} -> {len(b)}"]
        inside = max(map(abs, _numbers(a)), default=0.0)  # an array's numbers are rounded at the array's scale
        return [
            d
            for i, (x, y) in enumerate(zip(a, b))
            for d in differences(x, y, numbers=numbers, scale=inside, path=f"{path}[{i}]")
        ]
    if _kind(a) != _kind(b) and not (a is None or b is None) or isinstance(a, str) != isinstance(b, str):
        return [f"{path}: {a!r} -> {b!r}"]
    if not numbers:
        return []
    if isinstance(a, str):
        if NUMBER.sub("#", a) != NUMBER.sub("#", b):
            return [f"{path}: {a[:80]!r} -> {b[:80]!r}"]
        pairs = zip(NUMBER.findall(a), NUMBER.findall(b))
        bad = [(x, y) for x, y in pairs if not _printed_close(x, y, scale)]
        return [f"{path}: {x} -> {y} in {a[:60]!r}" for x, y in bad]
    if isinstance(a, bool) or a is None or b is None:
        return [] if a == b else [f"{path}: {a!r} -> {b!r}"]
    if a == b or math.isclose(a, b, rel_tol=REL, abs_tol=max(SCALE * scale, FLOOR)):
        return []
    if isinstance(a, float) and isinstance(b, float) and _printed_close(repr(a), repr(b), scale):
        return []  # a number the lesson rounded (0.089): its last kept digit may round the other way
    return [f"{path}: {a!r} -> {b!r}"]


def _printed_close(x: str, y: str, scale: float) -> bool:
    """Two numbers as a sentence prints them: close, or one unit apart in the last digit printed."""
    a, b = float(x), float(y)
    digits = x.split("e")[0].split(".")
    unit = 10.0 ** -(len(digits[1]) if len(digits) > 1 else 0) * (10.0 ** int(x.split("e")[1]) if "e" in x else 1)
    return math.isclose(a, b, rel_tol=REL, abs_tol=max(SCALE * scale, FLOOR)) or abs(a - b) <= unit * 1.0001


TIMED = re.compile(r"\w*seconds\w*|time_slope|flops_per_s|days_here")  # measured afresh by every run


def untimed(obj):
    """The answer without what a clock measured (and a progress status, done or idle by the cache's choice)."""
    if isinstance(obj, dict):
        return {
            k: "<measured>" if TIMED.fullmatch(k) or (k == "status" and obj[k] in ("done", "idle")) else untimed(v)
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [untimed(v) for v in obj]
    return obj


def split(text: str):
    """'200 {json}' -> ('200', parsed JSON without its measured times), or ('200', text) when not JSON."""
    status, _, body = text.partition(" ")
    try:
        return status, untimed(json.loads(body))
    except ValueError:
        return status, body


def answer_problems(recorded: str, now: str, *, trains: bool) -> list[str]:
    """What differs between two answers made with different arithmetic."""
    (s1, a), (s2, b) = split(recorded), split(now)
    if s1 != s2:
        return [f"status {s1} -> {s2}"]
    if isinstance(a, str) or isinstance(b, str):
        return [] if a == b else ["text differs"]
    problems = differences(a, b, numbers=not trains, scale=0.0)
    if isinstance(a, dict) and isinstance(b, dict):
        if a.get("params") != b.get("params"):
            problems.append(f"params {a.get('params')} -> {b.get('params')}")
        ids = [[c.get("id") for c in x.get("claims") or []] for x in (a, b)]
        if ids[0] != ids[1]:
            problems.append(f"claim ids {ids[0]} -> {ids[1]}")
    return problems

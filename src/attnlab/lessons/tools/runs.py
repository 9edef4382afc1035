"""The data, models and decoding behind `attnlab explain tools`.

A problem is a·b with whole operands of 1 to DIGITS digits, each written in DIGITS places (037, the boxes of a
form). The tool model is trained on   037*048=[037*048]>1776.   : the question, a call to the calculator in
brackets, the result the calculator returned after >, a full stop. The control is trained on   037*048=1776.   :
the same problems, as many, the answer written out. One problem a row, padded; the loss skips the padding.
A pair of operands whose hash falls in HELD_OUT is never trained on: the questions asked come from those.

Decoding is greedy. With the tool, when the model closes a call with ], the lab evaluates what is between the
brackets (common/calc.py) and writes > and the result (or >! for a call it refuses) and the full stop: the calculator's
line is the answer. Without it (the same model, calls not executed), the model writes whatever follows ] itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.lessons.common.calc import CalcError, evaluate
from attnlab.train import progress

CHARS = "0123456789*=[]>.!_"  # _ pads a row; the loss skips it
ID = {c: i for i, c in enumerate(CHARS)}
PAD = ID["_"]
DIGITS = 3  # the longest operand trained on, and the width every operand is written in
LENGTHS = (2, 3, 4)  # operand lengths asked: the longer operand has this many digits (4: longer than any trained)
CONTEXT = 40  # a 4-digit problem with its call and an 8-digit result is 31 characters
D_MODEL, N_LAYERS, N_HEADS = 64, 2, 4
BATCH, LR = 32, 3e-3
N_ASKED = 200  # questions per operand length (a share near 0.5 has a standard error of 0.035)
MAX_NEW = 24  # characters the model may write after the question


def held_out(a: int, b: int) -> bool:
    """About one pair in ten, never trained on: the questions come from these."""
    return (a * 1_000_003 + b * 7_919) % 10 == 0


def written(n: int) -> str:
    """An operand in DIGITS places (a longer one as it is)."""
    return str(n).zfill(DIGITS)


def question(a: int, b: int) -> str:
    return f"{written(a)}*{written(b)}="


def text(a: int, b: int, calls: bool) -> str:
    """One training example: with a call and the calculator's result, or the answer written out."""
    return question(a, b) + (f"[{written(a)}*{written(b)}]>{a * b}." if calls else f"{a * b}.")


def operands(g: torch.Generator, n: int, longest: int, keep_held: bool) -> list[tuple[int, int]]:
    """n pairs; the longer operand has `longest` digits and the other 1 .. longest, both uniform within their
    length, in a random order; only held-out pairs (keep_held) or only the others."""
    out: list[tuple[int, int]] = []
    while len(out) < n:
        short = int(torch.randint(1, longest + 1, (1,), generator=g))
        a, b = (_uniform(g, longest), _uniform(g, short))
        if bool(torch.randint(0, 2, (1,), generator=g)):
            a, b = b, a
        if held_out(a, b) == keep_held:
            out.append((a, b))
    return out


def _uniform(g: torch.Generator, digits: int) -> int:
    lo = 0 if digits == 1 else 10 ** (digits - 1)
    return int(torch.randint(lo, 10**digits, (1,), generator=g))


def training_pairs(g: torch.Generator, n: int) -> list[tuple[int, int]]:
    """What a training batch draws: each operand of 1 .. DIGITS digits, uniform in length, never a held-out pair."""
    out: list[tuple[int, int]] = []
    while len(out) < n:
        a, b = (_uniform(g, int(torch.randint(1, DIGITS + 1, (1,), generator=g))) for _ in range(2))
        if not held_out(a, b):
            out.append((a, b))
    return out


def rows(texts: list[str], shuffle_with: torch.Generator | None = None) -> torch.Tensor:
    """(B, the longest) one example a row, padded; with shuffle_with, each example's characters in a random
    order (the null: the same characters as often, no call to learn)."""
    out = torch.full((len(texts), max(len(s) for s in texts)), PAD)
    for i, s in enumerate(texts):
        ids = torch.tensor([ID[c] for c in s])  # (L,)
        if shuffle_with is not None:
            ids = ids[torch.randperm(len(ids), generator=shuffle_with)]
        out[i, : len(ids)] = ids
    return out


def train(name: str, calls: bool, steps: int, seed: int, shuffle: bool):
    """The tool model (calls) or the control, trained with the one training helper."""
    from attnlab.lessons.common.weights import small_gpt
    from attnlab.train.loop import TrainConfig
    from attnlab.train.small import train_small

    model = small_gpt(len(CHARS), CONTEXT, seed, D_MODEL, N_LAYERS, N_HEADS)
    cfg = TrainConfig(steps=max(steps, 1), batch_size=BATCH, lr=LR, weight_decay=0.0, grad_clip=1.0, seed=seed)
    order = torch.Generator().manual_seed(seed + 2)

    def batch(g: torch.Generator):
        x = rows([text(a, b, calls) for a, b in training_pairs(g, BATCH)], order if shuffle else None)
        y = x[:, 1:].masked_fill(x[:, 1:] == PAD, -100)  # (B, L - 1): the padding is not predicted
        return x[:, :-1], y

    train_small(model, cfg, batch, steps=steps, on_step=lambda step: progress.report(name, step, steps))
    model.eval()
    return model


@dataclass
class Said:
    """What the model wrote after a question, and what the lab inserted in it."""

    text: str  # everything after the question
    inserted: list[tuple[int, int]]  # (start, end) in text of what the calculator wrote (its full stop included)
    answer: str  # the digits after the last > (with calls) or after = (without), up to the full stop
    call: str | None  # what the first call asked, or None (no call)
    well_formed: bool  # the first call was one the calculator evaluates


def tool_result(call: str) -> str:
    try:
        return str(evaluate(call))
    except CalcError:
        return "!"


@torch.no_grad()
def decode(model, questions: list[str], tool: bool) -> list[Said]:
    """Greedy continuation of each question; questions of one length are decoded together."""
    said: list[Said | None] = [None] * len(questions)
    by_length: dict[int, list[int]] = {}
    for i, q in enumerate(questions):
        by_length.setdefault(len(q), []).append(i)
    for rows in by_length.values():
        for i, s in zip(rows, _decode_alike([questions[i] for i in rows], model, tool)):
            said[i] = s
    return said  # type: ignore[return-value]


def _decode_alike(questions: list[str], model, tool: bool) -> list[Said]:
    """Questions of one length, in one batch with one KV cache: every row that goes on is as long as the others,
    since a row ends at its full stop and the calculator's line, inserted after a call, ends with one."""
    seqs = [[ID[c] for c in q] for q in questions]
    start = len(seqs[0])
    inserted: list[list[tuple[int, int]]] = [[] for _ in seqs]
    live = [True] * len(seqs)
    cache = model.new_kv_cache()
    x = torch.tensor(seqs)  # (n, start): the questions, then one new character a row a step
    for _ in range(MAX_NEW):
        if not any(live):
            break
        logits = model(x, kv_cache=cache)  # (n, T, V)
        nxt = logits[:, -1].argmax(dim=-1).tolist()  # (n,)
        for i, tok in enumerate(nxt):
            if not live[i]:
                continue
            seqs[i].append(tok)
            if tool and CHARS[tok] == "]":
                so_far = "".join(CHARS[k] for k in seqs[i][start:])
                call = so_far[so_far.rfind("[") + 1 : -1] if "[" in so_far else ""
                reply = ">" + tool_result(call) + "."  # the calculator's line ends the answer
                inserted[i].append((len(so_far), len(so_far) + len(reply)))
                seqs[i] += [ID[c] for c in reply]
            live[i] = CHARS[seqs[i][-1]] != "." and len(seqs[i]) < CONTEXT
        x = torch.tensor([[tok] for tok in nxt])  # (n, 1): an ended row's character is computed and not read
    return [_said("".join(CHARS[k] for k in s[start:]), ins) for s, ins in zip(seqs, inserted)]


def _said(text: str, inserted: list[tuple[int, int]]) -> Said:
    body = text.split(".")[0]
    answer = body[body.rfind(">") + 1 :] if ">" in body else body
    call = None
    if "[" in body and "]" in body[body.find("[") :]:
        call = body[body.find("[") + 1 : body.find("]", body.find("["))]
    ok = call is not None and tool_result(call) != "!"
    return Said(text, inserted, answer, call, ok)


def asked(seed: int, length: int) -> list[tuple[int, int]]:
    """N_ASKED questions whose longer operand has `length` digits: held-out pairs at the trained lengths, any pair
    beyond them (none of those was trained on). The same for every model."""
    g = torch.Generator().manual_seed(1_000 * seed + length)
    return operands(g, N_ASKED, length, keep_held=length <= DIGITS)

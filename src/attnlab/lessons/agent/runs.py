"""The models behind `attnlab explain agent` and the loop that runs them.

The agent is the lab's GPT trained on tasks worked with their calls (tasks.py): the question, then [call]>result;
for each step, then the answer and a full stop. The loss is on what the model writes (the calls and the answer),
never on the question or on what a tool returned, as tool-use fine-tuning does. The single-shot model is the same
GPT trained on the same tasks written question=answer. (its loss on the answer): no loop, no tools.

The loop (`run`) is observe → act → observe: the model writes until it closes a call with ], the lab runs the tool
and writes >reply; into its context, and the model goes on, until it writes a full stop, MAX_CALLS calls have been
made, or the context is full. All rows run in lockstep with one KV cache: each step every row reads one character,
the next of its question or of a tool's reply where one is waiting, else the one it wrote itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from attnlab.lessons.agent import tasks as tasks_
from attnlab.train import progress

MARKS = "0123456789+-*()《》[]>;=.!_"  # _ pads a row; the loss skips it
CONTEXT = 96  # a 4-step task worked out is at most 80 characters
D_MODEL, N_LAYERS, N_HEADS = 64, 2, 4
BATCH, LR = 32, 3e-3
MAX_CALLS = 6  # the loop's step limit
PAD = "_"


def vocabulary(poem_chars: list[str]) -> dict[str, int]:
    return {c: i for i, c in enumerate(MARKS + "".join(poem_chars))}


def encode(vocab: dict[str, int], tasks: list[tasks_.Task], worked: bool, shuffle: torch.Generator | None):
    """(ids, writes): (B, L) one task a row, padded, and (B, L) where the model writes (its loss is read there).
    With `shuffle`, each row's characters in a random order at the same places (the null: nothing to learn)."""
    texts, masks = [], []
    for task in tasks:
        body = task.worked() if worked else f"{task.answer}."
        mask, lab = [False] * len(task.question), False
        for ch in body:  # > opens what a tool writes, ; closes it
            lab = lab or ch == ">"
            mask.append(not lab)
            lab = lab and ch != ";"
        texts.append(task.question + body)
        masks.append(mask)
    width = max(len(s) for s in texts)
    ids = torch.full((len(texts), width), vocab[PAD])
    writes = torch.zeros((len(texts), width), dtype=torch.bool)
    for i, (s, m) in enumerate(zip(texts, masks)):
        row = torch.tensor([vocab[c] for c in s])  # (L,)
        if shuffle is not None:
            row = row[torch.randperm(len(row), generator=shuffle)]
        ids[i, : len(s)] = row
        writes[i, : len(s)] = torch.tensor(m)
    return ids, writes


def build(vocab_size: int, seed: int):
    from attnlab.lessons.common.weights import small_gpt

    return small_gpt(vocab_size, CONTEXT, seed, D_MODEL, N_LAYERS, N_HEADS)


def train(name: str, worked: bool, vocab, poems, steps: int, seed: int, shuffle: bool):
    """The agent (`worked`: calls in its examples) or the single-shot model, with the one training helper."""
    from attnlab.train.loop import TrainConfig
    from attnlab.train.small import train_small

    model = build(len(vocab), seed)
    cfg = TrainConfig(steps=max(steps, 1), batch_size=BATCH, lr=LR, weight_decay=0.0, grad_clip=1.0, seed=seed)
    order = torch.Generator().manual_seed(seed + 2)

    def batch(g: torch.Generator):  # one chain length a batch: rows of one length need little padding
        chosen: list[tasks_.Task] = []
        steps_ = tasks_.TRAINED_STEPS[int(torch.randint(len(tasks_.TRAINED_STEPS), (1,), generator=g))]
        while len(chosen) < BATCH:
            kind = tasks_.KINDS[int(torch.randint(len(tasks_.KINDS), (1,), generator=g))]
            task = tasks_.make(g, kind, steps_, poems)
            if not task.held_out:
                chosen.append(task)
        ids, writes = encode(vocab, chosen, worked, order if shuffle else None)
        y = ids[:, 1:].masked_fill(~writes[:, 1:], -100)  # (B, L - 1): loss where the model writes
        return ids[:, :-1], y

    train_small(model, cfg, batch, steps=steps, on_step=lambda step: progress.report(name, step, steps))
    return model.eval()


@dataclass
class Step:
    call: str
    reply: str  # what the tool returned (tasks.FAILED for a call it refused)


@dataclass
class Run:
    """One task as the loop ran it."""

    text: str  # everything after the question, the tools' replies included
    steps: list[Step] = field(default_factory=list)
    replies: list[tuple[int, int]] = field(default_factory=list)  # [start, end) in text of what each tool wrote
    answer: str = ""  # what the model wrote after its last tool reply (or after =), up to the full stop
    stopped: str = "answer"  # answer | limit (MAX_CALLS calls made) | context (no full stop in the context)


@torch.no_grad()
def run(model, vocab: dict[str, int], questions: list[str], tools) -> list[Run]:
    """Each question through the loop (`tools` None: no loop, the model writes on), greedy, all in one batch."""
    chars = list(vocab)
    waiting = [[vocab[c] for c in q] for q in questions]  # what each row reads before writing: its question
    start = [len(q) for q in questions]
    seqs: list[list[int]] = [[] for _ in questions]
    runs = [Run("") for _ in questions]
    live = [True] * len(questions)
    cache = model.new_kv_cache()
    x = torch.tensor([[w.pop(0)] for w in waiting])  # (n, 1)
    for i, tok in enumerate(x[:, 0].tolist()):
        seqs[i].append(tok)
    for _ in range(CONTEXT - 1):
        if not any(live):
            break
        wrote = model(x, kv_cache=cache)[:, -1].argmax(-1).tolist()  # (n,)
        nxt = []
        for i, tok in enumerate(wrote):
            if not live[i]:
                nxt.append(vocab[PAD])
                continue
            if waiting[i]:
                tok = waiting[i].pop(0)  # the question or a tool's reply: read, not written
            else:
                _wrote(runs[i], seqs[i], start[i], tok, chars, vocab, tools, waiting[i])
                live[i] = chars[tok] != "." and runs[i].stopped == "answer"
            seqs[i].append(tok)
            nxt.append(tok)
        x = torch.tensor(nxt).unsqueeze(1)  # (n, 1): a finished row's character is computed and not read
    for i, r in enumerate(runs):
        if live[i]:
            r.stopped = "context"
        r.text = "".join(chars[k] for k in seqs[i][start[i] :])
        body = r.text.split(".")[0] if r.stopped == "answer" else ""
        r.answer = body[body.rfind(";") + 1 :] if r.stopped == "answer" else ""
    return runs


def _wrote(r: Run, seq: list[int], start: int, tok: int, chars, vocab, tools, waiting: list[int]) -> None:
    """The model wrote `tok`: where it closes a call, run the tool and queue its reply (or stop at the limit)."""
    if tools is None or chars[tok] != "]":
        return
    if len(r.steps) == MAX_CALLS:
        r.stopped = "limit"
        return
    so_far = "".join(chars[k] for k in seq[start:])
    call = so_far[so_far.rfind("[") + 1 :] if "[" in so_far else ""
    reply = tools(call)
    r.steps.append(Step(call, reply))
    r.replies.append((len(so_far) + 1, len(so_far) + 1 + len(reply) + 2))  # right after the ]
    waiting.extend(vocab[c] for c in f">{reply};")

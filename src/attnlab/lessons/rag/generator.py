"""The rag lesson's generator: the lab's GPT trained to write a poem's second line given its first and a retrieved
poem in the context,

    [ retrieved poem (24 characters) ] | [ first line ] = [ second line ]

the loss on the second line only. It trains on the training poems with their own text as the retrieved poem (what a
retriever returns when it is right) and, one batch row in ten, a blank context (what it gets with none), so the
same weights are measured alone, with a retrieved poem, with a random one and with the right one. On a real corpus
half the rows are drills: four lines of random characters of its vocabulary, which no memory answers. They teach it
to copy any character, where a few hundred real poems teach it to recite them (the lab's own poems are random
characters already).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attnlab.lessons.common.params import seeded
from attnlab.lessons.common.poems import LINE, Poem, of_lines

SEP, ASK, BLANK = "|", "=", "_"
CONTEXT = 4 * LINE + 4  # a 五绝 with its marks
LENGTH = CONTEXT + 1 + LINE + 1 + LINE
ANSWER = CONTEXT + 2 + LINE  # where the second line starts
BATCH, LR, D_MODEL = 32, 3e-3, 64
BLANK_SHARE = 0.1
DRILL_SHARE = 0.5  # with `drills`: rows of random characters of the vocabulary, which only copying answers


def vocabulary(poems: list[Poem]) -> list[str]:
    return [SEP, ASK, BLANK, *sorted({ch for p in poems for ch in p.text})]


def encode(vocab: dict[str, int], contexts: list[str], poems: list[Poem]) -> torch.Tensor:
    """(B, LENGTH) ids: each context (a poem's text, or '' for none) then the poem's question and answer."""
    rows = []
    for context, p in zip(contexts, poems):
        context = (context or BLANK * CONTEXT)[:CONTEXT].ljust(CONTEXT, BLANK)
        rows.append([vocab.get(ch, vocab[BLANK]) for ch in f"{context}{SEP}{p.query}{ASK}{p.answer}"])
    return torch.tensor(rows)


def build(vocab_size: int, seed: int):
    from attnlab.models import GPT, GPTConfig

    with seeded(seed):
        return GPT(
            GPTConfig(
                vocab_size=vocab_size, context_length=LENGTH, d_model=D_MODEL, n_heads=4, n_layers=2, tie_weights=True
            )
        )


def loss(model, ids: torch.Tensor, _unused=None) -> torch.Tensor:
    logits = model(ids[:, :-1])  # (B, T-1, V)
    return F.cross_entropy(logits[:, ANSWER - 1 :].flatten(0, 1), ids[:, ANSWER:].flatten())  # the answer only


def train(poems: list[Poem], vocab: dict[str, int], seed: int, steps: int, drills: bool = False, on_step=None):
    from attnlab.train.loop import TrainConfig
    from attnlab.train.small import train_small

    model = build(len(vocab), seed)
    cfg = TrainConfig(steps=max(1, steps), batch_size=BATCH, lr=LR, warmup_steps=min(20, steps // 5), seed=seed)

    chars = [c for c in vocab if c not in (SEP, ASK, BLANK, "，", "。")]

    def drill(g: torch.Generator) -> Poem:
        picks = torch.randint(len(chars), (4 * LINE,), generator=g).tolist()
        return of_lines(["".join(chars[i] for i in picks[k * LINE : (k + 1) * LINE]) for k in range(4)])

    def batch(g: torch.Generator):
        rows = torch.randint(len(poems), (BATCH,), generator=g).tolist()
        blank = (torch.rand(BATCH, generator=g) < BLANK_SHARE).tolist()
        drilled = (torch.rand(BATCH, generator=g) < (DRILL_SHARE if drills else 0.0)).tolist()
        chosen = [drill(g) if d else poems[i] for i, d in zip(rows, drilled)]
        return encode(vocab, ["" if b else p.text for p, b in zip(chosen, blank)], chosen), None

    train_small(model, cfg, batch, loss, steps=steps, on_step=on_step)
    return model.eval()


@torch.no_grad()
def write(model, vocab: dict[str, int], contexts: list[str], poems: list[Poem]) -> list[str]:
    """Greedy second lines, one character at a time, each reading the characters written before."""
    chars = list(vocab)
    ids = encode(vocab, contexts, poems)[:, :ANSWER]  # (B, ANSWER): up to '='
    for _ in range(LINE):
        nxt = model(ids)[:, -1].argmax(-1, keepdim=True)  # (B, 1)
        ids = torch.cat([ids, nxt], dim=1)
    return ["".join(chars[i] for i in row[ANSWER:].tolist()) for row in ids]


@torch.no_grad()
def attention_on_context(model, vocab: dict[str, int], context: str, poem: Poem) -> list[list[float]]:
    """The last layer's attention, heads averaged, from each answer position onto the context: (LINE, CONTEXT)."""
    maps: dict[str, torch.Tensor] = {}

    def record(name: str, tensor: torch.Tensor) -> None:
        if name.endswith("attn.weights"):
            maps[name] = tensor  # (B, H, T, T)

    ids = encode(vocab, [context], [poem])
    model(ids[:, :-1], record=record)
    last = maps[sorted(maps)[-1]][0].mean(0)  # (T, T)
    return last[ANSWER - 1 : ANSWER - 1 + LINE, :CONTEXT].tolist()

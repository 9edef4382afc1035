"""The models behind `attnlab explain instruct`: a base model of poems, and what fine-tuning it on instructions does.

The base model is the lab's GPT trained on the training poems as plain text, each ended by END. An instruction is
made from a poem itself, so no one writes data: its four line-initial characters are the request of a 藏头诗,

    USER 藏头：春夏秋冬 ASSISTANT 春眠不觉晓，夏……。秋……，冬……。 END

in the chat template's role tokens (USER, ASSISTANT, END: one token each, shown as <|user|>, <|assistant|>, <|end|>).
Fine-tuning starts from the base model's weights with the one training helper, the loss on the answer's tokens only
(the prompt is given, not learnt). The shuffled control is fine-tuned
alike on the same answers with each request taken from another poem of its batch: the same tokens, the same steps,
no link from a request to its answer. LoRA trains rank-r updates of the attention matrices only (attnlab.nn.lora).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from attnlab.lessons.common.params import seeded
from attnlab.lessons.common.poems import LINE, Poem, of_lines

USER, ASSISTANT, END = "\x01", "\x02", "\x03"  # the template's role tokens, one id each
SHOWN = {USER: "<|user|>", ASSISTANT: "<|assistant|>", END: "<|end|>"}
ASK = "藏头："
POEM = 4 * LINE + 4  # a 五绝 with its marks
CONTEXT = len(USER + ASK) + 4 + 1 + POEM + 1
D_MODEL, N_LAYERS, N_HEADS = 64, 2, 4
BATCH = 32
WARMUP = 30  # steps of linear warm-up (a fifth of a shorter run): without it some seeds learn to follow late
LR, LORA_LR = 4e-3, 1e-2
LORA_RANK, LORA_ALPHA = 16, 32.0
LORA_TARGETS = (
    "W_Q",
    "W_K",
    "W_V",
    "W_O",
)  # every attention matrix: W_Q and W_V alone (the paper's) learn too little here
DRILL_SHARE = 0.5  # rows of random characters of the poems: only following answers them, where a few hundred
# poems' requests are learnt by heart


def heads(poem: Poem) -> str:
    return "".join(line[0] for line in poem.lines)


def prompt(request: str) -> str:
    """The chat template up to where the assistant writes."""
    return f"{USER}{ASK}{request}{ASSISTANT}"


def plain(request: str) -> str:
    """The same request as a plain prompt, for the base model (it never saw the template)."""
    return f"{ASK}{request}"


def shown(text: str) -> str:
    """Text with the role tokens written out."""
    for token, name in SHOWN.items():
        text = text.replace(token, name)
    return text


def vocabulary(poems: list[Poem]) -> dict[str, int]:
    chars = sorted({ch for p in poems for ch in p.text} | set(ASK))
    return {c: i for i, c in enumerate([USER, ASSISTANT, END, *chars])}


def build(vocab_size: int, seed: int):
    from attnlab.models import GPT, GPTConfig

    with seeded(seed):
        return GPT(
            GPTConfig(
                vocab_size=vocab_size,
                context_length=CONTEXT,
                d_model=D_MODEL,
                n_heads=N_HEADS,
                n_layers=N_LAYERS,
                norm_first=True,
                positions="rope",
            )
        )


def rows(vocab: dict[str, int], texts: list[str], answer_from: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, y): (B, L) each text padded with END, and (B, L - 1) its next tokens with -100 before each row's
    answer_from (the loss skips the prompt) and after its first END."""
    width = max(len(s) for s in texts)
    ids = torch.full((len(texts), width), vocab[END])
    y = torch.full((len(texts), width - 1), -100)
    for i, (s, start) in enumerate(zip(texts, answer_from)):
        ids[i, : len(s)] = torch.tensor([vocab[c] for c in s])  # (L,)
        y[i, max(start - 1, 0) : len(s) - 1] = ids[i, max(start, 1) : len(s)]
    return ids[:, :-1], y


def _train(model, batch, steps: int, seed: int, lr: float, on_step, params=None):
    from attnlab.train.loop import TrainConfig
    from attnlab.train.small import train_small

    cfg = TrainConfig(
        steps=max(steps, 1),
        batch_size=BATCH,
        lr=lr,
        weight_decay=0.0,
        grad_clip=1.0,
        seed=seed,
        warmup_steps=min(WARMUP, steps // 5),
        schedule="constant",  # a decaying rate stalls some seeds before their last line follows
    )
    optimizer = None if params is None else torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    train_small(model, cfg, batch, steps=steps, optimizer=optimizer, on_step=on_step)
    return model.eval()


def pretrain(vocab, poems: list[Poem], steps: int, seed: int, on_step=None):
    """The base model: the poems as plain text, each ended by END."""

    def batch(g: torch.Generator):
        chosen = [poems[i] for i in torch.randint(len(poems), (BATCH,), generator=g).tolist()]
        return rows(vocab, [p.text + END for p in chosen], [0] * BATCH)

    return _train(build(len(vocab), seed), batch, steps, seed, LR, on_step)


def finetune(
    base,
    vocab,
    poems: list[Poem],
    steps: int,
    seed: int,
    *,
    shuffled=False,
    lora=False,
    on_step=None,
):
    """A copy of `base` fine-tuned on the poems' 藏头 instructions (shuffled: each request from another poem of the
    batch; lora: only rank-LORA_RANK updates of LORA_TARGETS train). Half the rows are drills: poems of random
    characters of the corpus's, which only following answers."""
    from attnlab.nn.lora import add_lora

    model = copy.deepcopy(base)
    params = None
    if lora:
        with seeded(seed):
            params = add_lora(model, LORA_RANK, LORA_ALPHA, LORA_TARGETS)
    order = torch.Generator().manual_seed(seed + 7)
    chars = sorted({ch for p in poems for ch in p.text} - {"，", "。"})

    def drill(g: torch.Generator) -> Poem:
        picks = torch.randint(len(chars), (4 * LINE,), generator=g).tolist()
        return of_lines(["".join(chars[i] for i in picks[k * LINE : (k + 1) * LINE]) for k in range(4)])

    def batch(g: torch.Generator):
        drilled = (torch.rand(BATCH, generator=g) < DRILL_SHARE).tolist()
        picks = torch.randint(len(poems), (BATCH,), generator=g).tolist()
        chosen = [drill(g) if d else poems[i] for d, i in zip(drilled, picks)]
        asked = [heads(p) for p in chosen]
        if shuffled:  # each request from another poem of the batch: the same requests, no link to the answers
            asked = [asked[i] for i in torch.randperm(BATCH, generator=order).tolist()]
        texts = [prompt(a) + p.text + END for a, p in zip(asked, chosen)]
        return rows(vocab, texts, [len(prompt(a)) for a in asked])

    return _train(model, batch, steps, seed, LORA_LR if lora else LR, on_step, params)


@torch.no_grad()
def write(model, vocab: dict[str, int], prompts: list[str]) -> list[str]:
    """Greedy answers of POEM characters after each prompt (prompts of one length, in one batch)."""
    chars = list(vocab)
    out: list[str] = [""] * len(prompts)
    by_length: dict[int, list[int]] = {}
    for i, p in enumerate(prompts):
        by_length.setdefault(len(p), []).append(i)
    for rows_ in by_length.values():
        ids = torch.tensor([[vocab[c] for c in prompts[i]] for i in rows_])  # (n, P)
        start = ids.shape[1]
        for _ in range(POEM):
            nxt = model(ids)[:, -1].argmax(-1, keepdim=True)  # (n, 1)
            ids = torch.cat([ids, nxt], dim=1)
        for i, row in zip(rows_, ids[:, start:].tolist()):
            out[i] = "".join(chars[k] for k in row).split(END)[0]
    return out


@dataclass
class Following:
    exact: bool  # a 五绝 in form whose four lines start with the four heads
    heads_right: int  # lines that start with their head (0 .. 4)
    in_form: bool  # four lines of LINE characters with ，。，。


def follows(answer: str, request: str) -> Following:
    body = answer.replace("，", "|").replace("。", "|").split("|")
    lines = body[:4]
    in_form = (
        len(answer) == POEM
        and [answer[k * (LINE + 1) + LINE] for k in range(4)] == ["，", "。", "，", "。"]
        and all(len(s) == LINE for s in lines)
    )
    right = sum(1 for k, line in enumerate(lines[:4]) if k < len(request) and line[:1] == request[k])
    return Following(in_form and right == 4, right, in_form)

"""The three models of the mlm lesson and how they guess: built the same size (`build`), trained on the same
windows with 4-copy masking (`mask_groups`, `train_one`), every held-out character guessed chunk by chunk
(`guess_logits`, `predict`), and the structural check that the causal model never sees its right side
(`right_change`). attnlab.lessons.mlm.lesson runs them; claims.py states the claims."""

from __future__ import annotations

import unicodedata

import torch
import torch.nn.functional as F

from attnlab.lessons.common.weights import redraw
from attnlab.train import progress

MODELS = (
    "bidirectional",
    "causal",
    "causal_fill",
)  # encoder (fill the blank), GPT (next character), GPT (fill the blank)
BATCH, LR = 16, 3e-3
N_LAYERS, N_HEADS = 2, 2
POSITIONS = "rope"  # both models: q.k depends on the offset i - j, so "read my pair 6 places away" is one pattern
MASK_GROUPS = 4  # each window is read 4 times, a different quarter of its characters hidden each time (below)
IGNORE = -100  # the target of a position that is not guessed (left visible)
CHUNK = 64  # targets guessed at once: (64, T, |V|) logits stay small even for a |V| of thousands


def maskable(ch: str) -> bool:
    """A character worth guessing: not punctuation, not a space or line break."""
    return not (ch.isspace() or unicodedata.category(ch).startswith("P"))


def build(kind: str, vocab: int, d: int, context: int, seed: int):
    """The two models, the same size: N_LAYERS blocks of width d, N_HEADS heads, weights drawn from the seed
    alone (weights.redraw).

    The encoder normalizes its summed embeddings (BERT's embedding LayerNorm, `embed_norm`): without it the
    first attention layer reads vectors of size ~0.02 (the tables' initial scale), its scores q.k stay ~0, every
    position averages the whole window, and the gradient that would sharpen them is ~|x|^2 as small. A GPT does
    not need attention to start learning (the character it reads is the one before its target, on its own
    position); a [MASK] position has nothing of its own. The norm adds 2d parameters (counted in n_params)."""
    from attnlab.models import GPT, Encoder, EncoderConfig, GPTConfig

    if kind in ("causal", "causal_fill"):
        model = GPT(
            GPTConfig(
                vocab_size=vocab,
                n_layers=N_LAYERS,
                d_model=d,
                n_heads=N_HEADS,
                context_length=context,
                positions=POSITIONS,
            )
        )
    else:
        model = Encoder(
            EncoderConfig(
                vocab_size=vocab,
                n_layers=N_LAYERS,
                d_model=d,
                n_heads=N_HEADS,
                context_length=context,
                positions=POSITIONS,
                embed_norm=True,
            )
        )
    return redraw(model, seed)


def mask_groups(x: torch.Tensor, mask_id: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """x (B, T) -> (inputs, hidden, targets), each (MASK_GROUPS * B, T): every character of every window is
    hidden (replaced by [MASK]) in exactly one of MASK_GROUPS copies of it, so each step the encoder, like the
    GPT, learns from every character of every window once; each copy hides a random ~1/MASK_GROUPS of them."""
    group = torch.randint(MASK_GROUPS, x.shape, generator=g)  # (B, T): the copy that hides each character
    hidden = (group[None] == torch.arange(MASK_GROUPS)[:, None, None]).flatten(0, 1)  # (K, B, T) -> (K*B, T)
    targets = x.repeat(MASK_GROUPS, 1)  # (K*B, T): copy k is rows k*B .. k*B+B-1
    return targets.masked_fill(hidden, mask_id), hidden, targets


def fill_loss(model, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The GPT's cross-entropy at each [MASK] (y != IGNORE), which it reads with the characters on its left."""
    hidden = y != IGNORE  # (K*B, T)
    return F.cross_entropy(model(x)[hidden], y[hidden])


def masked_loss(model, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The encoder's cross-entropy at the hidden positions (y != IGNORE)."""
    hidden = y != IGNORE  # (K*B, T)
    h = model(x)[hidden]  # (n, d): only the hidden positions go through the token head
    return F.cross_entropy(model.token_head(h), y[hidden])


def train_one(
    kind: str, stream: torch.Tensor, vocab: int, d: int, context: int, steps: int, seed: int, name: str | None = None
):
    """AdamW on random windows of the training stream: next-character loss (causal) or masked loss (the encoder and
    causal_fill), every character of every window a target once per step for each (mask_groups). Its progress is
    reported as `name` (default: the kind)."""
    from attnlab.train.data import get_batch
    from attnlab.train.loop import TrainConfig, lm_loss
    from attnlab.train.small import train_small

    model = build(kind, vocab, d, context, seed)
    cfg = TrainConfig(steps=max(1, steps), lr=LR, schedule="constant", grad_clip=None, seed=seed)

    def batch(g: torch.Generator):  # the same windows for every model
        x, y = get_batch(stream, context, BATCH, g)  # (B, T) each
        if kind == "causal":
            return x, y
        inp, hidden, targets = mask_groups(x, vocab - 1, g)  # (K*B, T) each
        return inp, targets.masked_fill(~hidden, IGNORE)  # a target only where hidden

    loss = {"causal": lm_loss, "causal_fill": fill_loss, "bidirectional": masked_loss}[kind]
    # torch's AdamW with its own defaults (weight decay on every parameter), not the lab's make_optimizer
    losses = train_small(
        model,
        cfg,
        batch,
        loss,
        steps=steps,
        optimizer=torch.optim.AdamW(model.parameters(), lr=LR, foreach=True),  # bitwise the loop's update, faster
        on_step=lambda step: progress.report(name or kind, step, steps) if step else None,
    )  # after each update
    model.eval()
    return model, losses[-1] if losses else float("nan")


def targets(poems: list[str], stream_start: int = 1) -> list[int]:
    """Positions in token_stream(poems) (which starts with <eot>: see held_out_stream) of the maskable characters."""
    out, at = [], stream_start
    for poem in poems:
        out += [at + i for i, ch in enumerate(poem) if maskable(ch)]
        at += len(poem) + 1
    return out


def guess_logits(models: dict, stream: torch.Tensor, where: list[int], mask_id: int, context: int):
    """Yield (model, ks, logits (m, V)) chunk by chunk: each model's logits for stream[where[k]], k in ks. The
    encoder reads a window around the target with [MASK] on it, the GPT the (up to `context`) characters left of
    it, predicting the next one. In chunks: a corpus has ~10^5 targets and ~10^4 characters, too many logits to
    hold at once. `models` may hold some of the three only (the left-only pair of another seed)."""
    N, T = len(stream), min(context, len(stream))
    enc, gpt, fill = (models.get(k) for k in MODELS)
    with torch.no_grad():
        for c in range(0, len(where), CHUNK) if enc is not None else ():
            js = where[c : c + CHUNK]
            starts = [min(max(j - T // 2, 0), N - T) for j in js]
            windows = torch.stack([stream[s : s + T] for s in starts])  # (m, T)
            at = torch.tensor([j - s for j, s in zip(js, starts)])  # (m,)
            rows = torch.arange(len(js))
            windows[rows, at] = mask_id
            yield "bidirectional", list(range(c, c + len(js))), enc.token_head(enc(windows)[rows, at])  # (m, V)
        by_len: dict[int, list[int]] = {}
        for k, j in enumerate(where):
            by_len.setdefault(min(j, context), []).append(k)
        for n, ks in by_len.items() if gpt is not None else ():
            for c in range(0, len(ks), CHUNK):
                part = ks[c : c + CHUNK]
                left = torch.stack([stream[where[k] - n : where[k]] for k in part])  # (m, n): the n characters left
                yield "causal", part, gpt(left)[:, -1]  # (m, V)
        by_len = {}
        for k, j in enumerate(where):  # causal_fill reads up to context - 1 characters and the [MASK]
            by_len.setdefault(min(j, context - 1), []).append(k)
        for n, ks in by_len.items() if fill is not None else ():
            for c in range(0, len(ks), CHUNK):
                part = ks[c : c + CHUNK]
                left = torch.stack(
                    [torch.cat([stream[where[k] - n : where[k]], torch.tensor([mask_id])]) for k in part]
                )
                yield "causal_fill", part, fill(left)[:, -1]  # (m, V): the output at the [MASK]


def predict(
    models: dict, stream: torch.Tensor, where: list[int], mask_id: int, allowed: torch.Tensor, context: int
) -> tuple[dict, dict]:
    """Each model's guess (n,) for stream[j], j in `where`, among the `allowed` ids (V,) bool (the maskable
    characters, never punctuation, <eot> or [MASK]), and its -ln p of the true stream[j] (n,), p among the same."""
    off = torch.where(allowed, 0.0, float("-inf"))  # (V,)
    truth = stream[where]  # (n,)
    guess = {k: torch.empty(len(where), dtype=torch.long) for k in models}
    nll = {k: torch.empty(len(where), dtype=torch.float64) for k in models}
    for kind, ks, logits in guess_logits(models, stream, where, mask_id, context):
        logp = torch.log_softmax(logits + off, -1)  # (m, V)
        guess[kind][ks] = logp.argmax(-1)
        nll[kind][ks] = -logp.gather(1, truth[ks][:, None])[:, 0].double()
    return guess, nll


def right_change(models: dict, stream: torch.Tensor, vocab_chars: int, context: int) -> dict:
    """Change every token after position i of one window; the largest change of the outputs at positions <= i."""
    T = min(context, len(stream))
    x = stream[:T][None].clone()  # (1, T)
    i = T // 2
    y = x.clone()
    y[0, i + 1 :] = (x[0, i + 1 :] + 1) % vocab_chars  # every later token a different character
    out = {}
    with torch.no_grad():
        out["causal"] = float((models["causal"](y)[0, : i + 1] - models["causal"](x)[0, : i + 1]).abs().max())
        enc = models["bidirectional"].token_logits
        out["bidirectional"] = float((enc(y)[0, : i + 1] - enc(x)[0, : i + 1]).abs().max())
    return out

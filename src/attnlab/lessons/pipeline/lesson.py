"""The whole pipeline on one line of a poem (steps ① to ④ of chapter 16), as plain data.

① text -> ids (the tokenizer's table), ② ids -> embedding rows + position rows, ③ attention weights of
every layer and head for the text, ④ the LM head's distribution over the next token after a context
(床前明月), with the cross-entropy -log p(target) that training (⑤) pushes down. Step ⑥, generation,
is `attnlab.sampling.generate`. Every number comes from one traced forward pass of the real model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attnlab.io.threads import threads_for
from attnlab.lessons.common.result import Matrix, Shown, tolist
from attnlab.trace import trace

DEFAULT_TEXT = "床前明月光"
DEFAULT_CONTEXT, DEFAULT_TARGET = "床前明月", "光"


@dataclass
class TokensStep:
    """① The text cut into tokens, each with its id; `vocab[i]` is the token with id i."""

    text: str
    tokens: list[str]
    ids: list[int]
    vocab: list[str]
    vocab_size: int


@dataclass
class EmbeddingStep:
    """② x_i = E[id_i] + P[i]: the row each id looks up, plus the row of its position."""

    tokens: list[str]
    ids: list[int]
    positions: str  # learned | sinusoidal | rope (rope adds no row: it rotates q and k inside attention)
    d_model: int
    token_rows: Matrix  # E[id_i], (T, d_model)
    position_rows: Matrix | None  # P[i], (T, d_model); None for rope
    sums: Matrix  # what the first block receives, (T, d_model)


@dataclass
class HeadMap:
    layer: int
    head: int
    weights: Matrix  # (T_q, T_k), row i = how much token i reads each token j <= i


@dataclass
class AttentionStep:
    """③ Every layer's and head's attention weights for the text (causal: nothing above the diagonal)."""

    tokens: list[str]
    n_layers: int
    n_heads: int
    maps: list[HeadMap]  # layer by layer, head by head


@dataclass
class NextToken:
    id: int
    token: str
    prob: float


@dataclass
class NextStep(Shown):
    """④ p(next token | context) over the whole vocabulary, and the loss if the answer is `target`."""

    context: str
    target: str | None
    distribution: list[NextToken]  # every token, in id order
    top: list[NextToken]  # the most probable, best first
    p_target: float | None
    loss: float | None  # cross-entropy -log p(target)
    uniform: float  # 1 / |V|: what a model that knows nothing gives every token
    uniform_loss: float  # log |V|


@dataclass
class PipelineView(Shown):
    cropped: int  # tokens dropped from the front of the text to fit the context
    tokens: TokensStep
    embedding: EmbeddingStep
    attention: AttentionStep
    next: NextStep


def _ids(tokenizer, text: str, context_length: int) -> tuple[list[int], int]:
    if not text:
        raise ValueError("the text is empty; give at least one character")
    ids = tokenizer.encode(text)  # names unseen characters
    cropped = max(0, len(ids) - context_length)
    return ids[cropped:], cropped


def tokens_step(tokenizer, text: str = DEFAULT_TEXT) -> TokensStep:
    ids = tokenizer.encode(text)
    return TokensStep(
        text=text,
        tokens=tokenizer.tokens(ids),
        ids=ids,
        vocab=tokenizer.tokens(range(tokenizer.vocab_size)),
        vocab_size=tokenizer.vocab_size,
    )


def _forward(model, ids: list[int]):
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        # One thread for a tiny model: faster, and the same summation order every time, so the page, the API
        # and an exported copy show the same last digits.
        with threads_for(model):
            return trace(model, torch.tensor([ids], device=device))  # (1, T)
    finally:
        model.train(was_training)


def _embedding(model, tokenizer, ids: list[int], tr) -> EmbeddingStep:
    tok_rows = tr["embed.tokens"][0]  # (T, d_model)
    pos_rows = tr["embed.positions"] if "embed.positions" in tr else None  # (T, d_model)
    sums = tok_rows + pos_rows if pos_rows is not None else tok_rows  # x_i = E[id_i] + P[i]
    return EmbeddingStep(
        tokens=tokenizer.tokens(ids),
        ids=ids,
        positions=model.config.positions,
        d_model=model.config.d_model,
        token_rows=tolist(tok_rows),
        position_rows=tolist(pos_rows) if pos_rows is not None else None,
        sums=tolist(sums),
    )


def _attention(model, tokenizer, ids: list[int], tr) -> AttentionStep:
    c = model.config
    found = [i for i in range(c.n_layers) if f"layers.{i}.attn.weights" in tr]  # ffn-only blocks have none
    heads = tr[f"layers.{found[0]}.attn.weights"].shape[1] if found else 0  # one-head: 1, not config.n_heads
    maps = [
        HeadMap(layer=i, head=h, weights=tolist(tr[f"layers.{i}.attn.weights"][0, h]))  # (T, T)
        for i in found
        for h in range(heads)
    ]
    return AttentionStep(tokens=tokenizer.tokens(ids), n_layers=c.n_layers, n_heads=heads, maps=maps)


def embedding_step(model, tokenizer, text: str = DEFAULT_TEXT) -> EmbeddingStep:
    ids, _ = _ids(tokenizer, text, model.config.context_length)
    return _embedding(model, tokenizer, ids, _forward(model, ids))


def attention_step(model, tokenizer, text: str = DEFAULT_TEXT) -> AttentionStep:
    ids, _ = _ids(tokenizer, text, model.config.context_length)
    return _attention(model, tokenizer, ids, _forward(model, ids))


def next_step(
    model, tokenizer, context: str = DEFAULT_CONTEXT, target: str | None = DEFAULT_TARGET, top: int = 10
) -> NextStep:
    """The distribution after `context`; with a one-token `target`, its probability and -log of it."""
    ids, _ = _ids(tokenizer, context, model.config.context_length)
    target_id = None
    if target:
        target_ids = tokenizer.encode(target)
        if len(target_ids) != 1:
            raise ValueError(f"the target must be one token, {target!r} is {len(target_ids)} tokens")
        target_id = target_ids[0]
    tr = _forward(model, ids)
    probs = torch.softmax(tr["logits"][0, -1].double(), dim=-1)  # (V,)
    dist = [NextToken(i, tokenizer.token(i), float(p)) for i, p in enumerate(probs.tolist())]
    best = sorted(dist, key=lambda n: -n.prob)[:top]
    p_target = dist[target_id].prob if target_id is not None else None
    vocab = tokenizer.vocab_size
    return NextStep(
        context=context,
        target=target or None,
        distribution=dist,
        top=best,
        p_target=p_target,
        loss=-math.log(p_target) if p_target else None,
        uniform=1 / vocab,
        uniform_loss=math.log(vocab),
    )


def pipeline(
    model, tokenizer, text: str = DEFAULT_TEXT, context: str = DEFAULT_CONTEXT, target: str | None = DEFAULT_TARGET
) -> PipelineView:
    """Steps ① to ④ for `text` (cropped to its last context_length tokens) and `context` -> `target`."""
    ids, cropped = _ids(tokenizer, text, model.config.context_length)
    tr = _forward(model, ids)  # one pass serves ② and ③
    return PipelineView(
        cropped=cropped,
        tokens=tokens_step(tokenizer, text),
        embedding=_embedding(model, tokenizer, ids, tr),
        attention=_attention(model, tokenizer, ids, tr),
        next=next_step(model, tokenizer, context, target),
    )

"""Which heads matter for the model's next-token prediction after the text, measured by removing each one.

    Δ_{l,h} = log p_ablated(answer) - log p(answer)      answer = the model's own top prediction after the text

(attnlab.inspect.head_effects; negative: the head was helping.) how="zero" sets the head's output to 0, an input
the model never saw in training, so a large Δ may be the shock of that as much as the head's job. how="mean" puts
in the head's average output over windows of the same text instead, which removes only what is specific to this
context. Either way it is one text and one prediction, not the head's importance in general.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.inspect import head_effects, run_with
from attnlab.io.threads import threads_for
from attnlab.lessons.common.result import Matrix, Shown, tolist
from attnlab.lessons.pipeline.lens import LensCell
from attnlab.lessons.pipeline.lesson import _ids

HOWS = ("zero", "mean")
MAX_PASSES = 256  # one forward pass per head: a model with more layers × heads than this gets no card


@dataclass
class HeadDelta:
    layer: int
    head: int
    delta: float


@dataclass
class HeadEffectsView(Shown):
    how: str  # zero | mean
    tokens: list[str]  # the text read (cropped to the model's context)
    answer: LensCell  # the model's own top prediction after the text, with every head in place
    log_p: float  # log p(answer) with every head in place
    n_layers: int
    n_heads: int
    delta: Matrix  # (layers, heads): Δ log p(answer) with that head removed
    shade: Matrix  # (layers, heads): |Δ| / max |Δ| in [0, 1], the cell's colour (the number is printed too)
    windows: int  # "mean": how many windows of the text the average was taken over (0 for "zero")
    window: int  # "mean": their length in tokens (0 for "zero")
    largest: HeadDelta  # the head whose removal lowers log p(answer) the most (its Δ may still be >= 0)


def reference_windows(ids: list[int]) -> torch.Tensor:
    """Every window of half the text's length (rounded up) at every offset: (N, w). The mean is over these rows
    and their positions, so each token is seen in more than one context."""
    w = (len(ids) + 1) // 2
    return torch.tensor([ids[s : s + w] for s in range(len(ids) - w + 1)])  # (N, w)


def heads_absent(model) -> str | None:
    """Why a model has no head-ablation card (a catalog key's last part), or None."""
    if not hasattr(model, "lm_head") or not hasattr(model, "blocks"):
        return "no_head"
    if any(getattr(b, "attn", None) is None for b in model.blocks):
        return "no_attention"  # the ffn-only ablation: blocks without attention, so no head to remove
    if len(model.blocks) * model.blocks[0].attn.n_heads > MAX_PASSES:
        return "too_big"
    return None


def head_effects_view(model, tokenizer, text: str, how: str = "zero") -> HeadEffectsView:
    """Δ log p of the model's top prediction after `text` with each head removed (`how`: zero or mean)."""
    if how not in HOWS:
        raise ValueError(f"how must be one of {HOWS}, got {how!r}")
    ids, _ = _ids(tokenizer, text, model.config.context_length)
    reference = reference_windows(ids) if how == "mean" else None
    with threads_for(model):
        logits, _ = run_with(model, ids)  # (1, T, vocab)
        log_probs = logits[0, -1].double().log_softmax(-1)  # (vocab,)
        target = int(log_probs.argmax())
        delta = head_effects(model, ids, target, how=how, reference=reference)  # (L, H)
    L, H = delta.shape
    size = delta.abs().max()
    shade = delta.abs() / size if size > 0 else torch.zeros_like(delta)  # (L, H)
    low = int(delta.argmin())
    return HeadEffectsView(
        how=how,
        tokens=tokenizer.tokens(ids),
        answer=LensCell(target, tokenizer.token(target), float(log_probs[target].exp())),
        log_p=float(log_probs[target]),
        n_layers=L,
        n_heads=H,
        delta=tolist(delta),
        shade=tolist(shade),
        windows=0 if reference is None else reference.shape[0],
        window=0 if reference is None else reference.shape[1],
        largest=HeadDelta(layer=low // H, head=low % H, delta=float(delta.flatten()[low])),
    )

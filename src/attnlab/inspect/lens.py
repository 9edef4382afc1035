"""The logit lens (nostalgebraist 2020): what the model would predict if it stopped after layer l.

    lens_l = LM_head(LN_f(x_l))      x_0 = the embedding, x_l = the residual stream after block l

LN_f is applied afresh to each layer's own stream (its own mean and variance), not the statistics of the last
layer's normalization; at l = L this is the model's own output exactly.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnlab.inspect.hooks import as_batch, evaluating, run_with


def n_layers(model: nn.Module) -> int:
    return len(model.blocks)


def residual_streams(model: nn.Module, ids) -> list[Tensor]:
    """x_0 .. x_L, each (B, T, d_model): the stream before block 0 and after each block."""
    _, tr = run_with(model, ids)
    return [tr["embed.output"]] + [tr[f"layers.{i}.output"] for i in range(n_layers(model))]


def unembed(model: nn.Module, x: Tensor) -> Tensor:
    """LM_head(LN_f(x)): (B, T, d_model) -> (B, T, vocab). Post-LN models have no final LayerNorm."""
    if not hasattr(model, "lm_head"):
        raise TypeError(
            f"the logit lens needs a model with an LM head over its vocabulary; {type(model).__name__} has none"
        )
    with evaluating(model):
        if getattr(model, "ln_f", None) is not None:
            x = model.ln_f(x)  # normalized with this layer's own statistics
        return model.lm_head(x)  # (B, T, d_model) -> (B, T, vocab)


def logit_lens(model: nn.Module, ids) -> Tensor:
    """Logits per layer: (layers + 1, T, vocab) for one sequence, (layers + 1, B, T, vocab) for a batch.

    Row 0 is the embedding's direct path LM_head(LN_f(x_0)); row L equals model(ids) exactly.
    """
    batch = as_batch(ids)
    lens = torch.stack([unembed(model, x) for x in residual_streams(model, batch)])  # (L+1, B, T, vocab)
    return lens[:, 0] if batch.shape[0] == 1 else lens


def answer_by_layer(lens: Tensor, target: int, position: int = -1) -> tuple[list[int], list[float]]:
    """The rank (0 = top) and probability of token `target` at `position`, layer by layer, from a one-sequence lens."""
    probs = lens[:, position].softmax(-1)  # (L+1, vocab)
    p = probs[:, target]  # (L+1,)
    ranks = (probs > p[:, None]).sum(-1)  # tokens strictly more likely than the answer
    return ranks.tolist(), p.tolist()

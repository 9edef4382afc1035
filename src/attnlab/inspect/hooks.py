"""Run a model with some of its named activations edited: the intervention every method here is built on.

Every module in attnlab.nn shows its tensors to an optional recorder (attnlab.trace); through `hooked`, a recorder
that returns a tensor replaces the one it was shown. So an edit is a function keyed by a trace name:

    logits, tr = run_with(model, ids, {"layers.0.attn.head_outputs": zero_head(1)})

Names (GPT): "embed.output" (the residual stream before block 0), "layers.{i}.attn.head_outputs" (B, H, T, d_k),
"layers.{i}.attn.output" (the attention sublayer's write), "layers.{i}.ffn.hidden" (B, T, d_ff, the neurons),
"layers.{i}.ffn.output", "layers.{i}.output" (the residual stream after block i).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

import torch
from torch import Tensor, nn

from attnlab.trace import Trace

Edit = Callable[[Tensor], Tensor]  # the tensor as computed -> the tensor the rest of the forward pass reads


def as_batch(ids) -> Tensor:
    """Token ids as a (B, T) long tensor: a list or a (T,) tensor is one sequence."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    if ids.dim() == 1:
        ids = ids[None]  # (T,) -> (1, T)
    if ids.dim() != 2 or ids.shape[1] == 0:
        raise ValueError(f"expected token ids of shape (T,) or (B, T) with T >= 1, got {tuple(ids.shape)}")
    return ids


@contextmanager
def evaluating(model: nn.Module) -> Iterator[None]:
    """Eval mode (no dropout) and no gradients for the duration, then the model's own mode back."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


def run_with(model: nn.Module, ids, edits: Mapping[str, Edit] | None = None, **forward) -> tuple[Tensor, Trace]:
    """One forward pass with `edits` applied where their names are computed; returns (logits, the trace).

    The trace holds every tensor as the rest of the pass saw it (edited ones after the edit). An edit whose name
    the model never computes is an error, so a typo cannot pass for "no effect".
    """
    edits = dict(edits or {})
    tr = Trace()
    applied: set[str] = set()

    def record(name: str, tensor: Tensor) -> Tensor | None:
        out = None
        if name in edits:
            out = edits[name](tensor)
            if out.shape != tensor.shape:
                raise ValueError(f"the edit of {name} changed its shape {tuple(tensor.shape)} -> {tuple(out.shape)}")
            applied.add(name)
        tr.record(name, tensor if out is None else out)
        return out

    with evaluating(model):
        logits = model(as_batch(ids), record=record, **forward)
    missing = set(edits) - applied
    if missing:
        raise KeyError(f"no activation named {', '.join(sorted(missing))}; this model records: {', '.join(tr.names())}")
    tr.output = logits
    return logits, tr


def replace_at(value: Tensor, *, head: int | None = None, position: int | None = None) -> Edit:
    """An edit that writes `value` (broadcast to the slice) into one head (axis 1 of head_outputs), one
    position (axis -2), both, or the whole tensor."""

    def edit(t: Tensor) -> Tensor:
        out = t.clone()
        index = [slice(None)] * t.dim()
        if head is not None:
            index[1] = head
        if position is not None:
            index[-2] = position
        out[tuple(index)] = value[tuple(index)] if value.shape == t.shape else value
        return out

    return edit


def zero_head(head: int, position: int | None = None) -> Edit:
    """head_outputs with one head's output set to 0 (at one position, or all)."""
    return lambda t: replace_at(torch.zeros_like(t), head=head, position=position)(t)


def knock_out(neurons, position: int | None = None) -> Edit:
    """ffn.hidden with the given neurons (indices on the last axis) set to 0."""
    neurons = torch.as_tensor(neurons, dtype=torch.long)

    def edit(t: Tensor) -> Tensor:
        out = t.clone()
        if position is None:
            out[..., neurons] = 0
        else:
            out[..., position, neurons] = 0
        return out

    return edit

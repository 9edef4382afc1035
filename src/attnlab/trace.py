"""Record what happens inside a forward pass, without a second copy of the model code.

Every module in attnlab.nn takes an optional `record(name, tensor)` callable and reports its intermediate
tensors to it (q, k, v, raw and masked scores, weights, each head's output, each block's output, logits).
`trace` passes a recorder through one forward pass and returns the tensors by name, with their shapes named:

    tr = trace(model, idx)
    tr["layers.0.attn.weights"]          # (B, H, T_q, T_k)
    tr.head(layer=0, head=1, what="q")   # (B, T, d_k)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

# What each recorded tensor's axes mean, by the last part of its name.
DIMS = {
    "tokens": "(B, T, d_model)",
    "positions": "(T, d_model)",
    "q": "(B, H, T_q, d_k)",
    "k": "(B, H, T_k, d_k)",
    "v": "(B, H, T_k, d_k)",
    "scores": "(B, H, T_q, T_k)",
    "masked_scores": "(B, H, T_q, T_k)",
    "weights": "(B, H, T_q, T_k)",
    "head_outputs": "(B, H, T_q, d_k)",
    "output": "(B, T, d_model)",
    "hidden": "(B, T, d_ff)",
    "logits": "(B, T, vocab)",
}


@dataclass
class TraceEntry:
    name: str
    tensor: Tensor
    dims: str  # e.g. "(B, H, T_q, T_k)"

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.tensor.shape)


class Trace:
    """The tensors of one forward pass, in the order they were computed."""

    def __init__(self) -> None:
        self.entries: dict[str, TraceEntry] = {}
        self.output = None

    def record(self, name: str, tensor: Tensor) -> None:
        leaf = name.rsplit(".", 1)[-1]
        dims = DIMS.get(leaf, "(B, 1, d_model)" if tensor.dim() == 3 else f"{tensor.dim()}-d")
        if leaf == "logits" and tensor.dim() == 2:
            dims = "(B, n_classes)"
        self.entries[name] = TraceEntry(name, tensor.detach(), dims)

    def __getitem__(self, name: str) -> Tensor:
        if name not in self.entries:
            raise KeyError(f"nothing recorded as {name!r}; recorded: {', '.join(self.entries)}")
        return self.entries[name].tensor

    def __contains__(self, name: str) -> bool:
        return name in self.entries

    def names(self) -> list[str]:
        return list(self.entries)

    def head(self, layer: int, head: int, what: str, attn: str = "attn", stack: str = "layers") -> Tensor:
        """One head's slice of q, k, v, scores, masked_scores, weights or head_outputs: drops the H axis."""
        return self[f"{stack}.{layer}.{attn}.{what}"][:, head]

    def _repr_html_(self) -> str:
        """In a notebook: the shape ledger and each layer's attention heatmaps (attnlab.display)."""
        from attnlab.display import trace_html

        return trace_html(self)

    def shapes(self) -> dict[str, dict]:
        """{name: {"shape": [...], "dims": "(B, H, T_q, T_k)"}} — the shape ledger of the pass."""
        return {e.name: {"shape": list(e.shape), "dims": e.dims} for e in self.entries.values()}


@torch.no_grad()
def trace(model: Callable, *args, **kwargs) -> Trace:
    """Run `model(*args, record=..., **kwargs)` once and return everything it recorded.

    `model` is a module or any of its methods that takes `record` (e.g. `encoder.classify`). Recording makes
    attention take the explicit path, so the weights exist; without it the fast fused path is used.
    """
    tr = Trace()
    tr.output = model(*args, record=tr.record, **kwargs)
    return tr

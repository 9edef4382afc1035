"""Multi-head attention: MultiHead(X) = Concat(head_1, ..., head_h) W_O, head_i = Attention(X W_Q^i, X W_K^i, X W_V^i).

The h heads are one d_model x d_model projection split into h slices of width d_k = d_model / h, so h heads
cost the same parameters and FLOPs as one wide head.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from attnlab.nn.attention import attention
from attnlab.nn.positions import RotaryEmbedding

Record = Callable[[str, Tensor], None]


class LayerKVCache:
    """Keys and values of the positions already seen by one attention layer (for incremental decoding)."""

    def __init__(self) -> None:
        self.k: Tensor | None = None  # (B, H, T_past, d_k)
        self.v: Tensor | None = None

    @property
    def length(self) -> int:
        return 0 if self.k is None else self.k.shape[-2]

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Add the new positions' k, v and return all of them: (B, H, T_past + T_new, d_k)."""
        self.k = k if self.k is None else torch.cat((self.k, k), dim=-2)
        self.v = v if self.v is None else torch.cat((self.v, v), dim=-2)
        return self.k, self.v


class KVCache:
    """One LayerKVCache per layer of a model; `length` is how many positions have been decoded so far."""

    def __init__(self, n_layers: int) -> None:
        self.layers = [LayerKVCache() for _ in range(n_layers)]

    @property
    def length(self) -> int:
        return self.layers[0].length if self.layers else 0

    def __getitem__(self, i: int) -> LayerKVCache:
        return self.layers[i]


def scoped(record: Record | None, prefix: str) -> Record | None:
    """A recorder that files its tensors under `prefix.`; None stays None (recording is opt-in)."""
    if record is None:
        return None
    return lambda name, tensor: record(f"{prefix}.{name}", tensor)


class MultiHeadAttention(nn.Module):
    """Self-attention (context=None) or cross-attention (keys and values from `context`) with h heads."""

    def __init__(self, d_model: int, n_heads: int, *, bias: bool = True, dropout: float = 0.0, rope: bool = False,
                 scale: bool = True):
        super().__init__()
        if n_heads <= 0 or d_model % n_heads != 0:
            raise ValueError(f"d_model must be divisible by n_heads: got d_model={d_model}, n_heads={n_heads}")
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        # nn.Linear stores W^T: self.W_Q(x) computes x W_Q for row vectors x, as in the paper.
        self.W_Q = nn.Linear(d_model, d_model, bias=bias)
        self.W_K = nn.Linear(d_model, d_model, bias=bias)
        self.W_V = nn.Linear(d_model, d_model, bias=bias)
        self.W_O = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = dropout
        self.rotary = RotaryEmbedding(self.d_k) if rope else None
        self.scale = scale  # False: the "no-scale" ablation, scores = Q K^T

    def split_heads(self, x: Tensor) -> Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_k).transpose(1, 2)  # (B, T, d_model) -> (B, H, T, d_k)

    def forward(
        self,
        x: Tensor,
        context: Tensor | None = None,
        *,
        causal: bool = False,
        mask: Tensor | None = None,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = False,
        kv_cache: LayerKVCache | None = None,
        record: Record | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """x: (B, T_q, d_model); context: (B, T_k, d_model) for cross-attention, else x itself.

        mask: bool, broadcasts to (B, H, T_q, T_k), True = may attend. key_padding_mask: (B, T_k) bool,
        True = a real token (False = padding, never attended). causal: query i reads keys <= i.
        kv_cache: for self-attention, the keys/values of earlier positions; the new ones are appended.
        Returns (output (B, T_q, d_model), weights (B, H, T_q, T_k) if need_weights or record else None).
        """
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"expected x of shape (B, T, {self.d_model}), got {tuple(x.shape)}")
        source = x if context is None else context
        if source.dim() != 3 or source.shape[0] != x.shape[0] or source.shape[-1] != self.d_model:
            raise ValueError(f"expected context of shape ({x.shape[0]}, T_k, {self.d_model}), got {tuple(source.shape)}")

        q = self.split_heads(self.W_Q(x))  # (B, T_q, d_model) -> (B, H, T_q, d_k)
        k = self.split_heads(self.W_K(source))  # (B, T_k, d_model) -> (B, H, T_k, d_k)
        v = self.split_heads(self.W_V(source))  # (B, T_k, d_model) -> (B, H, T_k, d_k)
        past = kv_cache.length if kv_cache is not None else 0
        if self.rotary is not None:
            q, k = self.rotary(q, offset=past), self.rotary(k, offset=past)
        if kv_cache is not None:
            k, v = kv_cache.append(k, v)  # (B, H, past + T_new, d_k)
        if record is not None:
            record("q", q)
            record("k", k)
            record("v", v)

        full_mask = self.build_mask(k.shape[-2], x.shape[0], mask, key_padding_mask)
        heads, weights = attention(
            q, k, v, full_mask,
            causal=causal,
            need_weights=need_weights,
            dropout_p=self.dropout if self.training else 0.0,
            record=record,
            scale=self.scale,
        )  # (B, H, T_q, d_k), (B, H, T_q, T_k) or None
        if record is not None:
            record("head_outputs", heads)
        concat = heads.transpose(1, 2).reshape(x.shape[0], x.shape[1], self.d_model)  # (B, H, T_q, d_k) -> (B, T_q, d_model)
        return self.W_O(concat), weights  # (B, T_q, d_model)

    @staticmethod
    def build_mask(t_k, batch, mask, key_padding_mask) -> Tensor | None:
        """Combine the explicit and key-padding masks into one bool mask broadcastable to (B, H, T_q, T_k).

        The causal mask is left to `attention`, which can then use the fused kernel's own causal mode.
        """
        combined = mask
        if mask is not None and mask.dtype != torch.bool:
            raise ValueError(f"mask must be a bool tensor (True = may attend), got dtype {mask.dtype}")
        if key_padding_mask is not None:
            if key_padding_mask.dtype != torch.bool or tuple(key_padding_mask.shape) != (batch, t_k):
                raise ValueError(
                    f"key_padding_mask must be a bool tensor of shape (B, T_k) = ({batch}, {t_k}) "
                    f"with True = real token, got {key_padding_mask.dtype} {tuple(key_padding_mask.shape)}"
                )
            padding = key_padding_mask[:, None, None, :]  # (B, T_k) -> (B, 1, 1, T_k)
            combined = padding if combined is None else combined & padding
        return combined

"""Multi-head attention: MultiHead(X) = Concat(head_1, ..., head_h) W_O, head_i = Attention(X W_Q^i, X W_K^i, X W_V^i).

The h heads are one d_model x d_model projection split into h slices of width d_k = d_model / h, so h heads
cost the same parameters and FLOPs as one wide head.

Grouped-query attention (GQA, Ainslie et al. 2023) keeps h query heads but only h_kv key/value heads: W_K and W_V
project to h_kv · d_k, and each group of h / h_kv consecutive query heads reads one K/V head, g(i) = i // (h / h_kv),
so head_i = Attention(X W_Q^i, X W_K^g(i), X W_V^g(i)). h_kv = h is multi-head attention (g(i) = i), h_kv = 1 is
multi-query attention (MQA, Shazeer 2019). The KV cache holds only the h_kv heads, which is the point: h / h_kv
times less memory kept per token. Here each K/V head is repeated for its group after the cache, as the equation
reads; a fused kernel reads the group's head in place instead, so it also reads h / h_kv times less per step.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from attnlab.nn.attention import attention
from attnlab.nn.positions import RotaryEmbedding

Record = Callable[[str, Tensor], None]


class LayerKVCache:
    """Keys and values of the positions already seen by one attention layer (for incremental decoding).

    It holds the layer's h_kv key/value heads (h_kv = n_heads unless the layer uses GQA/MQA), before any repeat.
    """

    def __init__(self) -> None:
        self.k: Tensor | None = None  # (B, H_kv, T_past, d_k)
        self.v: Tensor | None = None

    @property
    def length(self) -> int:
        return 0 if self.k is None else self.k.shape[-2]

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Add the new positions' k, v and return all of them: (B, H_kv, T_past + T_new, d_k)."""
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


def hooked(record: Record | None, name: str, tensor: Tensor) -> Tensor:
    """Show `tensor` to the recorder as `name`; a recorder that returns a tensor replaces it from here on.

    This is the one intervention hook (attnlab.inspect): zeroing a head, patching in another run's activation or
    knocking out a neuron edit the forward pass at the named point, in the model's own code path.
    """
    if record is None:
        return tensor
    replaced = record(name, tensor)
    return tensor if replaced is None else replaced


def scoped(record: Record | None, prefix: str) -> Record | None:
    """A recorder that files its tensors under `prefix.`; None stays None (recording is opt-in)."""
    if record is None:
        return None
    return lambda name, tensor: record(f"{prefix}.{name}", tensor)


class MultiHeadAttention(nn.Module):
    """Self-attention (context=None) or cross-attention (keys and values from `context`) with h heads.

    n_kv_heads: the key/value heads h_kv; None = n_heads (multi-head), 1 = MQA, between = GQA (it divides n_heads).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        *,
        bias: bool = True,
        dropout: float = 0.0,
        rope: bool = False,
        scale: bool = True,
        n_kv_heads: int | None = None,
    ):
        super().__init__()
        if n_heads <= 0 or d_model % n_heads != 0:
            raise ValueError(f"d_model must be divisible by n_heads: got d_model={d_model}, n_heads={n_heads}")
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        if not isinstance(n_kv_heads, int) or isinstance(n_kv_heads, bool) or n_kv_heads <= 0 or n_heads % n_kv_heads:
            raise ValueError(f"n_kv_heads must be a positive integer dividing n_heads={n_heads}, got {n_kv_heads!r}")
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.n_kv_heads = n_kv_heads
        self.group = n_heads // n_kv_heads  # query heads per K/V head
        # nn.Linear stores W^T: self.W_Q(x) computes x W_Q for row vectors x, as in the paper.
        self.W_Q = nn.Linear(d_model, d_model, bias=bias)
        self.W_K = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)  # d_model -> h_kv · d_k (= d_model for MHA)
        self.W_V = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)
        self.W_O = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = dropout
        self.rotary = RotaryEmbedding(self.d_k) if rope else None
        self.scale = scale  # False: the "no-scale" ablation, scores = Q K^T

    def split_heads(self, x: Tensor) -> Tensor:
        B, T, width = x.shape
        return x.view(B, T, width // self.d_k, self.d_k).transpose(1, 2)  # (B, T, H·d_k) -> (B, H, T, d_k)

    def repeat_kv(self, x: Tensor) -> Tensor:
        """Give each query head its group's K/V head: head i reads K/V head i // group."""
        if self.group == 1:
            return x  # multi-head attention: one K/V head per query head already
        return x.repeat_interleave(self.group, dim=1)  # (B, H_kv, T_k, d_k) -> (B, H, T_k, d_k)

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
        kv_cache: for self-attention, the keys/values of earlier positions; the new ones are appended (h_kv heads).
        record: receives q (B, H, T_q, d_k) and k, v as each query head reads them, (B, H, T_k, d_k): with GQA/MQA
        they are recorded after the repeat, so head i's k is its group's K/V head i // group (the cache holds
        only the (B, H_kv, T_k, d_k) before the repeat).
        Returns (output (B, T_q, d_model), weights (B, H, T_q, T_k) if need_weights or record else None).
        """
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"expected x of shape (B, T, {self.d_model}), got {tuple(x.shape)}")
        source = x if context is None else context
        if source.dim() != 3 or source.shape[0] != x.shape[0] or source.shape[-1] != self.d_model:
            raise ValueError(
                f"expected context of shape ({x.shape[0]}, T_k, {self.d_model}), got {tuple(source.shape)}"
            )

        q = self.split_heads(self.W_Q(x))  # (B, T_q, d_model) -> (B, H, T_q, d_k)
        k = self.split_heads(self.W_K(source))  # (B, T_k, h_kv·d_k) -> (B, H_kv, T_k, d_k)
        v = self.split_heads(self.W_V(source))  # (B, T_k, h_kv·d_k) -> (B, H_kv, T_k, d_k)
        past = kv_cache.length if kv_cache is not None else 0
        if self.rotary is not None:
            q, k = self.rotary(q, offset=past), self.rotary(k, offset=past)
        if kv_cache is not None:
            k, v = kv_cache.append(k, v)  # (B, H_kv, past + T_new, d_k): the cache keeps only the K/V heads
        k, v = self.repeat_kv(k), self.repeat_kv(v)  # (B, H_kv, T_k, d_k) -> (B, H, T_k, d_k), shared in groups
        if record is not None:
            record("q", q)
            record("k", k)
            record("v", v)

        full_mask = self.build_mask(k.shape[-2], x.shape[0], mask, key_padding_mask)
        heads, weights = attention(
            q,
            k,
            v,
            full_mask,
            causal=causal,
            need_weights=need_weights,
            dropout_p=self.dropout if self.training else 0.0,
            record=record,
            scale=self.scale,
        )  # (B, H, T_q, d_k), (B, H, T_q, T_k) or None
        heads = hooked(record, "head_outputs", heads)  # (B, H, T_q, d_k): where a head can be ablated or patched
        concat = heads.transpose(1, 2).reshape(
            x.shape[0], x.shape[1], self.d_model
        )  # (B, H, T_q, d_k) -> (B, T_q, d_model)
        out = hooked(record, "output", self.W_O(concat))  # (B, T_q, d_model): the sublayer's write to the residual
        return out, weights

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

"""Transformer blocks: attention (communication between positions) then FFN (computation at each position),
each sublayer wrapped in a residual connection and a LayerNorm.

post-LN (the 2017 paper, the course):  x <- LN(x + Sublayer(x))
pre-LN  (GPT-2, trains more stably):    x <- x + Sublayer(LN(x))
"""

from __future__ import annotations

from torch import Tensor, nn

from attnlab.nn.feedforward import FeedForward
from attnlab.nn.layernorm import LayerNorm
from attnlab.nn.multihead import LayerKVCache, MultiHeadAttention, Record, scoped


class Block(nn.Module):
    """Self-attention + FFN. Bidirectional, it is the encoder block; with causal=True it is GPT's block.

    A decoder-only (GPT) block has no cross-attention: it is this block with a causal mask.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int | None = None,
        *,
        norm_first: bool = False,
        activation: str = "relu",
        dropout: float = 0.0,
        bias: bool = True,
        rope: bool = False,
        eps: float = 1e-5,
    ):
        super().__init__()
        self.norm_first = norm_first
        self.attn = MultiHeadAttention(d_model, n_heads, bias=bias, dropout=dropout, rope=rope)
        self.ln_1 = LayerNorm(d_model, eps)
        self.ffn = FeedForward(d_model, d_ff, activation=activation, dropout=dropout, bias=bias)
        self.ln_2 = LayerNorm(d_model, eps)
        self.drop_1 = nn.Dropout(dropout)
        self.drop_2 = nn.Dropout(dropout)

    def forward(
        self,
        x: Tensor,
        *,
        causal: bool = False,
        mask: Tensor | None = None,
        key_padding_mask: Tensor | None = None,
        kv_cache: LayerKVCache | None = None,
        record: Record | None = None,
    ) -> Tensor:
        """x: (B, T, d_model) -> (B, T, d_model)."""

        def self_attention(h: Tensor) -> Tensor:
            out, _ = self.attn(h, causal=causal, mask=mask, key_padding_mask=key_padding_mask,
                               kv_cache=kv_cache, record=scoped(record, "attn"))
            return self.drop_1(out)

        def feed_forward(h: Tensor) -> Tensor:
            return self.drop_2(self.ffn(h))

        if self.norm_first:
            x = x + self_attention(self.ln_1(x))
            x = x + feed_forward(self.ln_2(x))
        else:
            x = self.ln_1(x + self_attention(x))
            x = self.ln_2(x + feed_forward(x))
        if record is not None:
            record("output", x)
        return x


class DecoderBlock(nn.Module):
    """The encoder-decoder's decoder block: masked self-attention, cross-attention to the encoder, FFN."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int | None = None,
        *,
        norm_first: bool = False,
        activation: str = "relu",
        dropout: float = 0.0,
        bias: bool = True,
    ):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, bias=bias, dropout=dropout)
        self.ln_1 = LayerNorm(d_model)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, bias=bias, dropout=dropout)
        self.ln_2 = LayerNorm(d_model)
        self.ffn = FeedForward(d_model, d_ff, activation=activation, dropout=dropout, bias=bias)
        self.ln_3 = LayerNorm(d_model)
        self.drops = nn.ModuleList(nn.Dropout(dropout) for _ in range(3))

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        *,
        key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        kv_cache: LayerKVCache | None = None,
        record: Record | None = None,
    ) -> Tensor:
        """x: (B, T_tgt, d_model) the target so far; memory: (B, T_src, d_model) the encoder's output."""

        def masked_self_attention(h: Tensor) -> Tensor:
            out, _ = self.self_attn(h, causal=True, key_padding_mask=key_padding_mask,
                                    kv_cache=kv_cache, record=scoped(record, "self_attn"))
            return self.drops[0](out)

        def cross_attention(h: Tensor) -> Tensor:
            # Queries from the target, keys and values from the source sentence.
            out, _ = self.cross_attn(h, memory, key_padding_mask=memory_key_padding_mask,
                                     record=scoped(record, "cross_attn"))
            return self.drops[1](out)

        def feed_forward(h: Tensor) -> Tensor:
            return self.drops[2](self.ffn(h))

        if self.norm_first:
            x = x + masked_self_attention(self.ln_1(x))
            x = x + cross_attention(self.ln_2(x))
            x = x + feed_forward(self.ln_3(x))
        else:
            x = self.ln_1(x + masked_self_attention(x))
            x = self.ln_2(x + cross_attention(x))
            x = self.ln_3(x + feed_forward(x))
        if record is not None:
            record("output", x)
        return x

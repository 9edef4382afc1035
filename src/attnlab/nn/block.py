"""Transformer blocks: attention (communication between positions) then FFN (computation at each position),
each sublayer wrapped in a residual connection and a LayerNorm.

post-LN (the 2017 paper, the course):  x <- LN(x + Sublayer(x))
pre-LN  (GPT-2, trains more stably):    x <- x + Sublayer(LN(x))

`ablations` (attnlab.nn.ablations) switch parts off in this one code path: no-residual drops the "x +",
no-layernorm makes each LN the identity, ffn-first swaps the two sublayers, one-head uses a single head of
width d_model, no-scale drops attention's 1/sqrt(d_k), attention-only / ffn-only leave one sublayer out.
"""

from __future__ import annotations

from torch import Tensor, nn

from attnlab.nn.ablations import check_ablations
from attnlab.nn.feedforward import FeedForward
from attnlab.nn.layernorm import LayerNorm
from attnlab.nn.moe import MoE
from attnlab.nn.multihead import LayerKVCache, MultiHeadAttention, Record, hooked, scoped


def _added(x: Tensor, out: Tensor) -> Tensor:
    """The residual connection: the sublayer's output is added to x."""
    return x + out


def _replaced(x: Tensor, out: Tensor) -> Tensor:
    """The no-residual ablation: the sublayer's output replaces x."""
    return out


class Block(nn.Module):
    """Self-attention + FFN. Bidirectional, it is the encoder block; with causal=True it is GPT's block.

    A decoder-only (GPT) block has no cross-attention: it is this block with a causal mask.
    ffn="moe" makes the FFN sublayer a top-k routed mixture of n_experts FeedForwards (attnlab.nn.moe).
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
        ablations: tuple[str, ...] = (),
        n_kv_heads: int | None = None,
        ffn: str = "dense",
        n_experts: int = 4,
        top_k: int = 1,
        capacity_factor: float = 1.25,
    ):
        super().__init__()
        self.norm_first = norm_first
        self.ablations = off = frozenset(check_ablations(ablations))
        heads = 1 if "one-head" in off else n_heads
        kv_heads = None if "one-head" in off else n_kv_heads  # one head has one K/V head (None = heads)
        # A part switched off is absent (None, or the identity for a LayerNorm), so the module lists what runs.
        self.attn = (
            None
            if "ffn-only" in off
            else MultiHeadAttention(
                d_model,
                heads,
                bias=bias,
                dropout=dropout,
                rope=rope and "no-positions" not in off,
                scale="no-scale" not in off,
                n_kv_heads=kv_heads,
            )
        )
        self.ln_1 = nn.Identity() if "no-layernorm" in off else LayerNorm(d_model, eps)
        if ffn not in ("dense", "moe"):
            raise ValueError(f"ffn must be 'dense' or 'moe', got {ffn!r}")
        # ffn="moe": the same FFN sublayer, as a top-k routed mixture of n_experts FeedForwards (attnlab.nn.moe)
        self.ffn = (
            None
            if "attention-only" in off
            else FeedForward(d_model, d_ff, activation=activation, dropout=dropout, bias=bias)
            if ffn == "dense"
            else MoE(
                d_model,
                d_ff,
                n_experts=n_experts,
                top_k=top_k,
                capacity_factor=capacity_factor,
                activation=activation,
                dropout=dropout,
                bias=bias,
            )
        )
        self.ln_2 = nn.Identity() if "no-layernorm" in off else LayerNorm(d_model, eps)
        self.drop_1 = nn.Dropout(dropout)
        self.drop_2 = nn.Dropout(dropout)
        # The other ablations are chosen here too, so forward is the equation: how a sublayer's output meets x
        # (no-residual: it replaces x), and which sublayers run in which order (ffn-first swaps them, each keeping
        # its own LayerNorm; attention-only / ffn-only leave one out).
        self.residual = _replaced if "no-residual" in off else _added
        order = ("ffn", "attn") if "ffn-first" in off else ("attn", "ffn")
        self.order = tuple(name for name in order if getattr(self, name) is not None)

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
            out, _ = self.attn(
                h,
                causal=causal,
                mask=mask,
                key_padding_mask=key_padding_mask,
                kv_cache=kv_cache,
                record=scoped(record, "attn"),
            )
            return self.drop_1(out)

        def feed_forward(h: Tensor) -> Tensor:
            if isinstance(self.ffn, FeedForward):  # an MoE (or a lesson's stand-in) records nothing inside
                return self.drop_2(self.ffn(h, record=scoped(record, "ffn")))
            return self.drop_2(self.ffn(h))

        sublayers = {"attn": (self_attention, self.ln_1), "ffn": (feed_forward, self.ln_2)}
        for name in self.order:  # attention then FFN, as configured
            sublayer, ln = sublayers[name]
            if self.norm_first:
                x = self.residual(x, sublayer(ln(x)))  # pre-LN:  x <- x + Sublayer(LN(x)), (B, T, d_model)
            else:
                x = ln(self.residual(x, sublayer(x)))  # post-LN: x <- LN(x + Sublayer(x)), (B, T, d_model)
        return hooked(record, "output", x)  # (B, T, d_model): the residual stream after this block


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
            out, _ = self.self_attn(
                h, causal=True, key_padding_mask=key_padding_mask, kv_cache=kv_cache, record=scoped(record, "self_attn")
            )
            return self.drops[0](out)

        def cross_attention(h: Tensor) -> Tensor:
            # Queries from the target, keys and values from the source sentence.
            out, _ = self.cross_attn(
                h, memory, key_padding_mask=memory_key_padding_mask, record=scoped(record, "cross_attn")
            )
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

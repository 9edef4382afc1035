"""Decoder-only (GPT): causal self-attention + FFN blocks, no cross-attention; logits over the next token."""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import Tensor, nn

from attnlab.models.config import ModelConfig
from attnlab.models.embedding import Embedding, init_head
from attnlab.nn import Block, KVCache, LayerNorm
from attnlab.nn.ablations import check_ablations
from attnlab.nn.moe import aux_loss as moe_aux_loss
from attnlab.nn.multihead import Record, scoped

FFNS = ("dense", "moe")


@dataclass
class GPTConfig(ModelConfig):
    vocab_size: int = 64  # how many distinct tokens
    n_layers: int = 2  # blocks stacked
    tie_weights: bool = False  # share the embedding table with the LM head (GPT-2 does)
    ablations: tuple[str, ...] = field(default_factory=tuple)  # parts switched off (attnlab.nn.ablations); () = intact
    n_kv_heads: int | None = None  # key/value heads: None = n_heads (MHA), 1 = MQA, between = GQA
    ffn: str = "dense"  # dense: one FFN | moe: a top-k routed mixture of experts
    n_experts: int = 4  # experts per MoE layer (ffn="moe" only)
    top_k: int = 1  # experts each token is sent to
    capacity_factor: float = 1.25  # an expert takes at most capacity_factor * tokens * top_k / n_experts tokens
    balance_loss: float = 0.01  # weight of the load-balancing auxiliary loss added to the training loss

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_kv_heads is not None:
            if not isinstance(self.n_kv_heads, int) or isinstance(self.n_kv_heads, bool) or self.n_kv_heads <= 0:
                raise ValueError(f"n_kv_heads must be a positive integer or None, got {self.n_kv_heads!r}")
            if self.n_heads % self.n_kv_heads:
                raise ValueError(
                    f"n_kv_heads must divide n_heads: got n_heads={self.n_heads}, n_kv_heads={self.n_kv_heads}"
                )
        if self.ffn not in FFNS:
            raise ValueError(f"ffn must be one of {FFNS}, got {self.ffn!r}")
        for name in ("n_experts", "top_k"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.top_k > self.n_experts:
            raise ValueError(f"top_k must be at most n_experts: got top_k={self.top_k}, n_experts={self.n_experts}")
        if not isinstance(self.capacity_factor, (int, float)) or self.capacity_factor <= 0:
            raise ValueError(f"capacity_factor must be a positive number, got {self.capacity_factor!r}")
        if not isinstance(self.balance_loss, (int, float)) or self.balance_loss < 0:
            raise ValueError(f"balance_loss must be a number >= 0, got {self.balance_loss!r}")
        if not isinstance(self.ablations, (list, tuple, str)):
            raise ValueError(f"ablations must be a list of names, got {self.ablations!r}")
        self.ablations = check_ablations(self.ablations)  # a checkpoint's JSON list comes back as a sorted tuple


class GPT(nn.Module):
    """logits = LMHead(Block_N(...Block_1(Embed(idx) + Pos)...)), every block causal."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = c = config
        self.embed = Embedding(c.vocab_size, c.context_length, c.d_model, c.positions, c.dropout, ablations=c.ablations)
        self.blocks = nn.ModuleList(
            Block(
                c.d_model,
                c.n_heads,
                c.d_ff,
                norm_first=c.norm_first,
                activation=c.activation,
                dropout=c.dropout,
                bias=c.bias,
                rope=c.positions == "rope",
                eps=c.ln_eps,
                ablations=c.ablations,
                n_kv_heads=c.n_kv_heads,
                ffn=c.ffn,
                n_experts=c.n_experts,
                top_k=c.top_k,
                capacity_factor=c.capacity_factor,
            )
            for _ in range(c.n_layers)
        )
        # Pre-LN leaves the residual stream un-normalized, so it needs one last LayerNorm (GPT-2's ln_f).
        self.ln_f = LayerNorm(c.d_model, c.ln_eps) if c.norm_first and "no-layernorm" not in c.ablations else None
        self.causal = "no-causal-mask" not in c.ablations  # the ablation: every position reads the future too
        self.lm_head = init_head(nn.Linear(c.d_model, c.vocab_size, bias=False))
        if c.tie_weights:
            self.lm_head.weight = self.embed.tok.weight

    @property
    def aux_loss(self) -> Tensor | None:
        """The MoE layers' load-balancing losses from the last forward, summed (None for a dense model); the
        training loop adds config.balance_loss times it to the cross-entropy."""
        return moe_aux_loss(self)

    def new_kv_cache(self) -> KVCache:
        """An empty cache; pass it to forward step after step to decode incrementally."""
        return KVCache(len(self.blocks))

    def forward(
        self, idx: Tensor, *, kv_cache: KVCache | None = None, record: Record | None = None, causal: bool | None = None
    ) -> Tensor:
        """idx: (B, T) token ids -> logits (B, T, vocab_size). With a kv_cache, idx holds only the new tokens.
        causal: None = as configured (masked unless the no-causal-mask ablation); True evaluates any model the way
        it generates, where no future exists."""
        causal = self.causal if causal is None else causal
        offset = kv_cache.length if kv_cache is not None else 0
        x = self.embed(idx, offset, record=scoped(record, "embed"))  # (B, T, d_model)
        for i, block in enumerate(self.blocks):
            x = block(
                x,
                causal=causal,
                kv_cache=kv_cache[i] if kv_cache is not None else None,
                record=scoped(record, f"layers.{i}"),
            )
        if self.ln_f is not None:
            x = self.ln_f(x)
        logits = self.lm_head(x)  # (B, T, d_model) -> (B, T, vocab_size)
        if record is not None:
            record("logits", logits)
        return logits

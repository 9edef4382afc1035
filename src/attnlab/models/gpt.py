"""Decoder-only (GPT): causal self-attention + FFN blocks, no cross-attention; logits over the next token."""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import Tensor, nn

from attnlab.models.config import ModelConfig
from attnlab.models.embedding import Embedding, init_head
from attnlab.nn import Block, KVCache, LayerNorm
from attnlab.nn.ablations import check_ablations
from attnlab.nn.multihead import Record, scoped


@dataclass
class GPTConfig(ModelConfig):
    vocab_size: int = 64  # how many distinct tokens
    n_layers: int = 2  # blocks stacked
    tie_weights: bool = False  # share the embedding table with the LM head (GPT-2 does)
    ablations: tuple[str, ...] = field(default_factory=tuple)  # parts switched off (attnlab.nn.ablations); () = intact

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.ablations, (list, tuple, str)):
            raise ValueError(f"ablations must be a list of names, got {self.ablations!r}")
        self.ablations = check_ablations(self.ablations)  # a checkpoint's JSON list comes back as a sorted tuple


class GPT(nn.Module):
    """logits = LMHead(Block_N(...Block_1(Embed(idx) + Pos)...)), every block causal."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = c = config
        self.embed = Embedding(c.vocab_size, c.context_length, c.d_model, c.positions, c.dropout,
                               ablations=c.ablations)
        self.blocks = nn.ModuleList(
            Block(c.d_model, c.n_heads, c.d_ff, norm_first=c.norm_first, activation=c.activation,
                  dropout=c.dropout, bias=c.bias, rope=c.positions == "rope", eps=c.ln_eps, ablations=c.ablations)
            for _ in range(c.n_layers)
        )
        # Pre-LN leaves the residual stream un-normalized, so it needs one last LayerNorm (GPT-2's ln_f).
        self.ln_f = LayerNorm(c.d_model, c.ln_eps) if c.norm_first and "no-layernorm" not in c.ablations else None
        self.causal = "no-causal-mask" not in c.ablations  # the ablation: every position reads the future too
        self.lm_head = init_head(nn.Linear(c.d_model, c.vocab_size, bias=False))
        if c.tie_weights:
            self.lm_head.weight = self.embed.tok.weight

    def new_kv_cache(self) -> KVCache:
        """An empty cache; pass it to forward step after step to decode incrementally."""
        return KVCache(len(self.blocks))

    def forward(self, idx: Tensor, *, kv_cache: KVCache | None = None, record: Record | None = None,
                causal: bool | None = None) -> Tensor:
        """idx: (B, T) token ids -> logits (B, T, vocab_size). With a kv_cache, idx holds only the new tokens.
        causal: None = as configured (masked unless the no-causal-mask ablation); True evaluates any model the way
        it generates, where no future exists."""
        causal = self.causal if causal is None else causal
        offset = kv_cache.length if kv_cache is not None else 0
        x = self.embed(idx, offset, record=scoped(record, "embed"))  # (B, T, d_model)
        for i, block in enumerate(self.blocks):
            x = block(x, causal=causal, kv_cache=kv_cache[i] if kv_cache is not None else None,
                      record=scoped(record, f"layers.{i}"))
        if self.ln_f is not None:
            x = self.ln_f(x)
        logits = self.lm_head(x)  # (B, T, d_model) -> (B, T, vocab_size)
        if record is not None:
            record("logits", logits)
        return logits

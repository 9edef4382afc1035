"""Encoder-decoder (the 2017 paper, T5): a bidirectional encoder reads the source; a causal decoder writes the
target, reading the source through cross-attention (queries from the target, keys and values from the source)."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from attnlab.models.config import ModelConfig
from attnlab.models.embedding import Embedding, init_head
from attnlab.nn import Block, DecoderBlock, KVCache, LayerNorm
from attnlab.nn.multihead import Record, scoped


@dataclass
class EncoderDecoderConfig(ModelConfig):
    src_vocab_size: int = 64
    tgt_vocab_size: int = 64
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    positions: str = "sinusoidal"  # the paper's choice

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.positions == "rope":
            raise ValueError("the encoder-decoder supports positions 'learned' or 'sinusoidal', got 'rope'")


class EncoderDecoder(nn.Module):
    def __init__(self, config: EncoderDecoderConfig):
        super().__init__()
        self.config = c = config
        self.src_embed = Embedding(c.src_vocab_size, c.context_length, c.d_model, c.positions, c.dropout)
        self.tgt_embed = Embedding(c.tgt_vocab_size, c.context_length, c.d_model, c.positions, c.dropout)
        common = dict(norm_first=c.norm_first, activation=c.activation, dropout=c.dropout, bias=c.bias)
        self.encoder = nn.ModuleList(Block(c.d_model, c.n_heads, c.d_ff, **common) for _ in range(c.n_encoder_layers))
        self.decoder = nn.ModuleList(
            DecoderBlock(c.d_model, c.n_heads, c.d_ff, **common) for _ in range(c.n_decoder_layers)
        )
        self.enc_ln = LayerNorm(c.d_model) if c.norm_first else None
        self.dec_ln = LayerNorm(c.d_model) if c.norm_first else None
        self.lm_head = init_head(nn.Linear(c.d_model, c.tgt_vocab_size, bias=False))

    def new_kv_cache(self) -> KVCache:
        return KVCache(len(self.decoder))

    def encode(
        self, src: Tensor, *, src_key_padding_mask: Tensor | None = None, record: Record | None = None
    ) -> Tensor:
        """src: (B, S) -> memory (B, S, d_model), every source position reading every other."""
        x = self.src_embed(src, record=scoped(record, "src_embed"))
        for i, block in enumerate(self.encoder):
            x = block(x, key_padding_mask=src_key_padding_mask, record=scoped(record, f"encoder.{i}"))
        return self.enc_ln(x) if self.enc_ln is not None else x

    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        *,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        kv_cache: KVCache | None = None,
        record: Record | None = None,
    ) -> Tensor:
        """tgt: (B, T) target tokens so far, memory: (B, S, d_model) -> logits (B, T, tgt_vocab_size)."""
        offset = kv_cache.length if kv_cache is not None else 0
        x = self.tgt_embed(tgt, offset, record=scoped(record, "tgt_embed"))
        for i, block in enumerate(self.decoder):
            x = block(
                x,
                memory,
                key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=src_key_padding_mask,
                kv_cache=kv_cache[i] if kv_cache is not None else None,
                record=scoped(record, f"decoder.{i}"),
            )
        if self.dec_ln is not None:
            x = self.dec_ln(x)
        logits = self.lm_head(x)  # (B, T, d_model) -> (B, T, tgt_vocab_size)
        if record is not None:
            record("logits", logits)
        return logits

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        *,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        record: Record | None = None,
    ) -> Tensor:
        memory = self.encode(src, src_key_padding_mask=src_key_padding_mask, record=record)
        return self.decode(
            tgt,
            memory,
            src_key_padding_mask=src_key_padding_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            record=record,
        )

"""Encoder-only (BERT-style): bidirectional self-attention; heads for token prediction and classification."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from attnlab.models.config import ModelConfig
from attnlab.models.embedding import Embedding, init_head
from attnlab.nn import Block, LayerNorm
from attnlab.nn.multihead import Record, scoped


@dataclass
class EncoderConfig(ModelConfig):
    vocab_size: int = 64
    n_layers: int = 2
    n_classes: int = 2  # outputs of the sequence-classification head
    type_vocab_size: int = 0  # BERT's segment (sentence A/B) embedding rows; 0 = none
    embed_norm: bool = False  # LayerNorm over the summed embeddings (BERT); False = none
    task_heads: bool = True  # token_head and class_head; a checkpoint without them (e.g. MiniLM) sets False

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.type_vocab_size, int) or self.type_vocab_size < 0:
            raise ValueError(f"type_vocab_size must be a non-negative integer, got {self.type_vocab_size!r}")


class Encoder(nn.Module):
    """Every position reads every other (no causal mask): a representation of each token in full context."""

    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.config = c = config
        self.embed = Embedding(
            c.vocab_size,
            c.context_length,
            c.d_model,
            c.positions,
            c.dropout,
            type_vocab_size=c.type_vocab_size,
            norm=c.embed_norm,
            eps=c.ln_eps,
        )
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
            )
            for _ in range(c.n_layers)
        )
        self.ln_f = LayerNorm(c.d_model, c.ln_eps) if c.norm_first else None
        if c.task_heads:
            self.token_head = init_head(
                nn.Linear(c.d_model, c.vocab_size)
            )  # predicts a (masked) token at each position
            self.class_head = init_head(nn.Linear(c.d_model, c.n_classes))  # reads the first position, BERT's [CLS]
        else:
            self.token_head = self.class_head = None

    def forward(
        self,
        idx: Tensor,
        *,
        key_padding_mask: Tensor | None = None,
        token_type_ids: Tensor | None = None,
        record: Record | None = None,
    ) -> Tensor:
        """idx: (B, T) -> hidden states (B, T, d_model). key_padding_mask: (B, T), True = real token.
        token_type_ids: (B, T) segment ids (0 = sentence A) for a model with a segment embedding."""
        x = self.embed(idx, record=scoped(record, "embed"), token_type_ids=token_type_ids)  # (B, T, d_model)
        for i, block in enumerate(self.blocks):
            x = block(x, key_padding_mask=key_padding_mask, record=scoped(record, f"layers.{i}"))
        if self.ln_f is not None:
            x = self.ln_f(x)
        return x

    def token_logits(
        self, idx: Tensor, *, key_padding_mask: Tensor | None = None, record: Record | None = None
    ) -> Tensor:
        """(B, T) -> (B, T, vocab_size): which token belongs at each position (masked-LM head)."""
        self._need_heads()
        logits = self.token_head(self(idx, key_padding_mask=key_padding_mask, record=record))
        if record is not None:
            record("logits", logits)
        return logits

    def classify(self, idx: Tensor, *, key_padding_mask: Tensor | None = None, record: Record | None = None) -> Tensor:
        """(B, T) -> (B, n_classes): one label for the whole sequence, read off position 0."""
        self._need_heads()
        hidden = self(idx, key_padding_mask=key_padding_mask, record=record)
        logits = self.class_head(hidden[:, 0])  # (B, d_model) -> (B, n_classes)
        if record is not None:
            record("logits", logits)
        return logits

    def _need_heads(self) -> None:
        if self.token_head is None:
            raise ValueError("this encoder has no task heads (config.task_heads=False): use its hidden states")

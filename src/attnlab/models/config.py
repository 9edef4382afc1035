"""Config dataclasses shared by the three forms, with checks that name what was expected and what came."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

POSITIONS = ("learned", "sinusoidal", "rope")
ACTIVATIONS = ("relu", "gelu", "gelu_tanh")


@dataclass
class ModelConfig:
    """Fields every form shares. Subclasses add their vocabularies and depths."""

    context_length: int = 64  # the longest sequence the model reads
    d_model: int = 64  # width of every token vector
    n_heads: int = 4  # heads per attention layer; d_k = d_model / n_heads
    d_ff: int | None = None  # FFN hidden width; None means 4 * d_model
    dropout: float = 0.0
    norm_first: bool = False  # False: post-LN (the paper); True: pre-LN (GPT-2)
    positions: str = "learned"  # learned | sinusoidal | rope
    activation: str = "relu"  # relu (the paper) | gelu (BERT) | gelu_tanh (GPT-2's tanh approximation)
    bias: bool = True
    ln_eps: float = 1e-5  # LayerNorm's eps; BERT checkpoints use 1e-12

    def __post_init__(self) -> None:
        def positive(name: str, value) -> None:
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")

        for f in fields(self):
            if f.name.startswith(
                ("vocab_size", "src_vocab", "tgt_vocab", "n_layers", "n_encoder", "n_decoder", "n_classes")
            ) or f.name in ("context_length", "d_model", "n_heads"):
                positive(f.name, getattr(self, f.name))
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model must be divisible by n_heads: got d_model={self.d_model}, n_heads={self.n_heads}"
            )
        if self.d_ff is not None:
            positive("d_ff", self.d_ff)
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if not (isinstance(self.ln_eps, (int, float)) and 0.0 < self.ln_eps < 1.0):
            raise ValueError(f"ln_eps must be in (0, 1), got {self.ln_eps!r}")
        if self.positions not in POSITIONS:
            raise ValueError(f"positions must be one of {POSITIONS}, got {self.positions!r}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.positions == "rope" and (self.d_model // self.n_heads) % 2:
            raise ValueError(f"rope needs an even head width d_model/n_heads, got {self.d_model // self.n_heads}")

    @property
    def hidden(self) -> int:
        return 4 * self.d_model if self.d_ff is None else self.d_ff

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict):
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown {cls.__name__} fields {sorted(unknown)}; expected some of {sorted(known)}")
        return cls(**data)

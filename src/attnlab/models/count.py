"""How many parameters a Transformer holds and how many FLOPs it spends, from its shape alone.

`Architecture` is a model's shape as a paper or a model card gives it (layers, widths, heads, KV heads, the FFN,
the vocabulary, what is shared). `count_params` and `count_flops` read it, or one of the lab's own configs
(GPTConfig, EncoderConfig, EncoderDecoderConfig), so a learner can count GPT-3 with the same code that counts
the poem model. The counts are exact for the lab's models (tests compare them with `sum(p.numel())` and with
torch's FlopCounterMode) and follow the published layouts for the others (models/published.py).

FLOPs here are those of the matrix products, as FlopCounterMode counts them: a (m×k)·(k×n) product is 2·m·k·n.
Softmax, norms, activations and the embedding lookups are left out (a few per cent at these sizes); a forward
pass over T tokens costs 2·T·M for the M weights used in products, plus 4·L·T²·d for QKᵀ and A·V (all T² pairs:
the kernel computes the masked half too). Training adds the backward pass, twice the forward: 6·N·D plus
attention, the rule the scaling-law papers use.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

NORMS = ("layernorm", "rmsnorm", "none")
POSITIONS = ("learned", "sinusoidal", "rope", "none")
HEADS = ("tied", "separate", "none")


@dataclass(frozen=True)
class Architecture:
    """A Transformer's shape: what counting needs, in the terms papers use."""

    layers: int  # blocks of the decoder (or of the only stack, for a decoder-only or encoder-only model)
    d_model: int
    heads: int
    vocab: int
    context: int
    kv_heads: int | None = None  # heads of K and V: None = heads (multi-head), 1 = MQA, between = GQA
    d_ff: int | None = None  # the FFN's hidden width; None = 4·d_model
    gated: bool = False  # a gated FFN (SwiGLU, Llama): gate, up and down matrices instead of two
    encoder_layers: int = 0  # > 0: an encoder-decoder, whose decoder blocks also attend to the encoder
    src_vocab: int | None = None  # an encoder-decoder's source table when it is not shared with the target's
    positions: str = "learned"  # learned: a context × d_model table; sinusoidal or rope: no parameters
    head: str = "tied"  # the output layer over the vocabulary: tied to the token table, separate, or none
    head_bias: bool = False
    bias: bool = True  # biases of the attention and FFN projections
    norm: str = "layernorm"  # layernorm (gain and bias), rmsnorm (gain only), none
    final_norm: bool = True  # one more norm after the last block (pre-LN models: GPT-2, Llama)
    embedding_norm: bool = False  # a norm over the summed embeddings (BERT)
    token_types: int = 0  # segment embeddings (BERT: 2)
    pooler: bool = False  # BERT's d×d layer on the first position
    classes: int = 0  # a classification head d × classes with bias (the lab's encoder)
    attention: bool = True  # False: blocks without attention (an ablation)
    ffn: bool = True  # False: blocks without their FFN (an ablation)
    experts: int = 0  # > 0: each FFN is a mixture of this many expert FFNs and a router d×experts (0: one dense FFN)
    top_k: int = 1  # experts each token runs through (the active ones), with experts > 0

    def __post_init__(self) -> None:
        for name in ("layers", "d_model", "heads", "vocab", "context"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.d_model % self.heads:
            raise ValueError(f"d_model must be divisible by heads: got d_model={self.d_model}, heads={self.heads}")
        if self.kv_heads is not None and (self.kv_heads <= 0 or self.heads % self.kv_heads):
            raise ValueError(f"kv_heads must divide heads ({self.heads}), got {self.kv_heads}")
        if self.d_ff is not None and self.d_ff <= 0:
            raise ValueError(f"d_ff must be a positive integer, got {self.d_ff}")
        if self.experts < 0 or not 1 <= self.top_k <= max(1, self.experts):
            raise ValueError(f"experts must be >= 0 and top_k in [1, experts]: got {self.experts}, {self.top_k}")
        for name, allowed in (("positions", POSITIONS), ("norm", NORMS), ("head", HEADS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")

    @property
    def hidden(self) -> int:
        return 4 * self.d_model if self.d_ff is None else self.d_ff

    @property
    def d_kv(self) -> int:
        """The width of K (and of V): kv_heads · d_head."""
        return (self.kv_heads or self.heads) * (self.d_model // self.heads)

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def architecture_of(config) -> Architecture:
    """The shape of one of the lab's configs (or an Architecture, unchanged)."""
    if isinstance(config, Architecture):
        return config
    from attnlab.models.encoder import EncoderConfig
    from attnlab.models.encoder_decoder import EncoderDecoderConfig
    from attnlab.models.gpt import GPTConfig

    c = config
    if not isinstance(c, (GPTConfig, EncoderConfig, EncoderDecoderConfig)):
        raise TypeError(f"cannot count a {type(c).__name__}: give an Architecture or one of the lab's model configs")
    common = dict(
        d_model=c.d_model,
        heads=c.n_heads,
        context=c.context_length,
        d_ff=c.d_ff,
        bias=c.bias,
        positions=c.positions,
        final_norm=c.norm_first,
    )
    if isinstance(c, GPTConfig):
        off = set(c.ablations)
        return Architecture(
            layers=c.n_layers,
            vocab=c.vocab_size,
            head="tied" if c.tie_weights else "separate",
            **{**common, "positions": "none" if "no-positions" in off else c.positions},
            norm="none" if "no-layernorm" in off else "layernorm",
            kv_heads=None if "one-head" in off else c.n_kv_heads,  # one-head keeps one wide K/V head
            experts=c.n_experts if c.ffn == "moe" else 0,
            top_k=c.top_k if c.ffn == "moe" else 1,
            attention="ffn-only" not in off,
            ffn="attention-only" not in off,
        )
    if isinstance(c, EncoderConfig):
        return Architecture(
            layers=c.n_layers,
            vocab=c.vocab_size,
            head="separate" if c.task_heads else "none",
            head_bias=True,
            classes=c.n_classes if c.task_heads else 0,
            token_types=c.type_vocab_size,
            embedding_norm=c.embed_norm,
            **common,
        )
    return Architecture(
        layers=c.n_decoder_layers,
        encoder_layers=c.n_encoder_layers,
        vocab=c.tgt_vocab_size,
        src_vocab=c.src_vocab_size,
        head="separate",
        **common,
    )


def _norm(a: Architecture) -> int:
    return {"layernorm": 2, "rmsnorm": 1, "none": 0}[a.norm] * a.d_model


def _attention(a: Architecture, kv_width: int) -> int:
    """W_Q and W_O (d×d), W_K and W_V (d×d_kv), and their biases."""
    d = a.d_model
    return 2 * d * d + 2 * d * kv_width + (2 * d + 2 * kv_width if a.bias else 0)


def _ffn(a: Architecture) -> int:
    d, h = a.d_model, a.hidden
    matrices = 3 if a.gated else 2
    return matrices * d * h + ((matrices - 1) * h + d if a.bias else 0)


def param_parts(config) -> dict[str, int]:
    """Parameters by part: embeddings (token tables, segments and their norm), positions, attention, ffn,
    norms (the blocks' and the final ones), head (the output layer, 0 when tied), other (pooler, class head)."""
    a = architecture_of(config)
    d, blocks = a.d_model, a.layers + a.encoder_layers
    cross = a.layers if a.encoder_layers else 0  # an encoder-decoder's decoder blocks also attend to the encoder
    attention = _attention(a, a.d_kv)
    positions = a.context * d if a.positions == "learned" else 0
    separate_source = bool(a.encoder_layers and a.src_vocab)  # then the source has its own token and position tables
    return {
        "embeddings": a.vocab * d
        + (a.src_vocab * d if separate_source else 0)
        + a.token_types * d
        + (_norm(a) if a.embedding_norm else 0),
        "positions": positions * (2 if separate_source else 1),
        "attention": (blocks if a.attention else 0) * attention + cross * attention,
        "ffn": (blocks if a.ffn else 0) * (_ffn(a) * max(1, a.experts) + a.d_model * a.experts),  # + MoE routers
        # two norms a block (three with cross-attention), and one after each stack in a pre-LN model
        "norms": (2 * blocks + cross + (2 if a.encoder_layers else 1) * a.final_norm) * _norm(a),
        "head": (a.vocab * d if a.head == "separate" else 0) + (a.vocab if a.head != "none" and a.head_bias else 0),
        "other": (d * d + d if a.pooler else 0) + (d * a.classes + a.classes if a.classes else 0),
    }


def count_params(config) -> int:
    """Every parameter of a model of this shape (a shared table counted once)."""
    return sum(param_parts(config).values())


def active_params(config) -> int:
    """Parameters one token runs through: all of them for a dense model; for a mixture of experts, top_k of each
    block's experts (and every router), not all of them."""
    a = architecture_of(config)
    idle = (a.layers + a.encoder_layers) * (a.experts - a.top_k) * _ffn(a) if a.ffn and a.experts else 0
    return count_params(a) - idle


def non_embedding_params(config) -> int:
    """Parameters outside the vocabulary's and the positions' matrices (the token table, the position table and an
    untied output layer): the N of Kaplan et al.'s laws, which grows with depth and width only."""
    parts = param_parts(config)
    return count_params(config) - parts["embeddings"] - parts["positions"] - parts["head"]


def forward_flops(config, seq_len: int | None = None) -> int:
    """The matrix-product FLOPs of one forward pass over one sequence of `seq_len` tokens (default: the context);
    for an encoder-decoder, a source and a target of that length."""
    a = architecture_of(config)
    t = a.context if seq_len is None else seq_len
    if t <= 0:
        raise ValueError(f"seq_len must be a positive integer, got {t}")
    d = a.d_model
    projections = (2 * d * d + 2 * d * a.d_kv) if a.attention else 0  # W_Q, W_K, W_V, W_O
    # a MoE token runs through top_k experts and the router (at full capacity: a dropped choice costs nothing)
    ffn = ((3 if a.gated else 2) * d * a.hidden * a.top_k + d * a.experts) if a.ffn else 0
    scores = 2 * (2 * t * t * d) if a.attention else 0  # Q Kᵀ and A V, over every head: 2·T²·d each
    blocks = (a.layers + a.encoder_layers) * (2 * t * (projections + ffn) + scores)
    cross = a.layers * (2 * t * (2 * d * d + 2 * d * a.d_kv) + 4 * t * t * d) if a.encoder_layers else 0
    head = 2 * t * d * a.vocab if a.head != "none" else 0
    return blocks + cross + head


def count_flops(config, tokens: int, *, seq_len: int | None = None, training: bool = True) -> int:
    """FLOPs to process `tokens` tokens in sequences of `seq_len` (default: the context): forward only, or
    training (forward and backward: 3 × forward, i.e. 6·N·D plus attention)."""
    a = architecture_of(config)
    t = a.context if seq_len is None else seq_len
    per_token = forward_flops(a, t) / t
    return round((3 if training else 1) * per_token * tokens)

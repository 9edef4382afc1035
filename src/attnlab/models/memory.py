"""Where a Transformer's memory goes, in bytes, from its shape alone: training state, activations, KV cache.

Training keeps four things per parameter (Rajbhandari et al. 2020, ZeRO, section 3.1):
  fp32:  weights 4 + gradients 4 + AdamW's m 4 + v 4                              = 16 bytes
  mixed: 16-bit weights 2 + 16-bit gradients 2 + fp32 master weights 4 + m 4 + v 4 = 16 bytes
so mixed precision does not shrink the model state; it halves the activations and speeds up the matmuls.
torch's AdamW also keeps one step counter per parameter tensor (a 0-d float32: 4 bytes a tensor).

Activations, the tensors autograd saves for the backward pass, grow with batch b and sequence s. For a
GPT-style layer of width h with a heads, in 16-bit with dropout and without recomputation
(Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models, section 4.1):
  s·b·h·(34 + 5·a·s/h) bytes a layer,
where 5·a·s/h is the stored a×s×s attention maps (softmax output, its dropout mask and output). Recomputing
attention in the backward pass ("selective recomputation", or a fused FlashAttention kernel) leaves 34·s·b·h.
`lab_activation_bytes` counts, term by term, what the lab's own GPT saves (fp32, no dropout), checked exactly
against autograd's saved tensors in tests/test_memory.py.

Inference holds the weights and the KV cache: K and V for every layer, KV head and past position,
  2 · layers · kv_heads · head_dim · context · batch · bytes per element.
1 GB here is 10⁹ bytes (as the issue and the cards' makers write it); GiB is 2³⁰.
"""

from __future__ import annotations

import math

from attnlab.models.count import Architecture, architecture_of, count_params

GB = 10**9
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "int8": 1}  # bytes per element
PER_PARAM = {  # training bytes per parameter, by part (ZeRO, section 3.1)
    "fp32": {"weights": 4, "gradients": 4, "adam_m": 4, "adam_v": 4},
    "mixed": {"weights": 2, "gradients": 2, "master_weights": 4, "adam_m": 4, "adam_v": 4},
}
ADAM_STEP_BYTES = 4  # torch's AdamW: one float32 step counter per parameter tensor


def per_param_bytes(precision: str = "fp32") -> dict[str, int]:
    """Training bytes per parameter by part, for "fp32" or "mixed" (fp16/bf16 with fp32 master weights)."""
    if precision not in PER_PARAM:
        raise ValueError(f"precision must be one of {sorted(PER_PARAM)}, got {precision!r}")
    return dict(PER_PARAM[precision])


def training_state_bytes(n_params: int, precision: str = "fp32") -> int:
    """Weights + gradients + optimizer state (+ master weights): n_params × 16 in both recipes."""
    return n_params * sum(per_param_bytes(precision).values())


def adamw_state_bytes(n_params: int, n_tensors: int, element_bytes: int = 4) -> int:
    """torch.optim.AdamW's state: m and v per parameter, plus one 4-byte step counter per parameter tensor."""
    return 2 * n_params * element_bytes + ADAM_STEP_BYTES * n_tensors


def kv_cache_bytes(
    layers: int, kv_heads: int, head_dim: int, context: int, batch: int = 1, element_bytes: int = 2
) -> int:
    """2 (K and V) · layers · kv_heads · head_dim · context · batch · bytes per element."""
    return 2 * layers * kv_heads * head_dim * context * batch * element_bytes


def kv_cache_of(config, context: int | None = None, batch: int = 1, dtype: str = "fp16") -> int:
    """The KV cache of a model (an Architecture or one of the lab's configs) holding `context` positions."""
    a = architecture_of(config)
    return kv_cache_bytes(
        a.layers + a.encoder_layers,
        a.kv_heads or a.heads,
        a.d_model // a.heads,
        a.context if context is None else context,
        batch,
        DTYPE_BYTES[dtype],
    )


def korthikanti_activation_bytes(
    layers: int,
    seq: int,
    batch: int,
    hidden: int,
    heads: int,
    element_bytes: int = 2,
    recompute_attention: bool = False,
) -> int:
    """Activations of `layers` GPT-style layers (Korthikanti et al. 2022, section 4.1). In 16-bit (element_bytes
    2) it is s·b·h·(34 + 5·a·s/h) a layer: 16 tensors of s·b·h elements and 2 one-byte dropout masks (34), and the
    a·s·s softmax output, its one-byte mask and its dropout output (5·a·s/h). For fp32 the same tensors take 4
    bytes: 66 + 9·a·s/h. recompute_attention drops the a·s·s terms (selective recomputation, FlashAttention)."""
    sbh = seq * batch * hidden
    per_layer = sbh * (16 * element_bytes + 2)
    if not recompute_attention:
        per_layer += (2 * element_bytes + 1) * heads * seq * seq * batch
    return layers * per_layer


def lab_activation_bytes(config, batch: int, seq: int, *, explicit: bool = False) -> int:
    """The bytes autograd saves for one forward pass and cross-entropy loss of the lab's GPT (attnlab.models.GPT:
    fp32, dropout 0, no ablations, dense FFN), counted term by term from the code; parameters not included.

    explicit=False: attention through torch's fused CPU kernel (what training runs), which saves q, k, v, its output
    and one log-sum-exp per row, never the T×T map. explicit=True: the written-out path (what a trace runs), which
    saves the softmax output and its masked copy (2·H·T² a sequence) and the causal mask instead of the log-sum-exp.
    GQA/MQA saves as much as multi-head attention: attention reads K and V repeated to all H heads, and those copies
    are what it saves (the smaller h_kv-head K and V before the repeat are not kept).
    """
    c = config
    if c.dropout or c.ablations or getattr(c, "ffn", "dense") != "dense":
        raise ValueError("lab_activation_bytes counts an intact GPT with dropout 0 and a dense FFN")
    e, bt, d, heads = 4, batch * seq, c.d_model, c.n_heads
    n = bt * d  # one (B, T, d_model) tensor
    hidden = (
        bt * c.hidden * (1 if c.activation == "relu" else 2)
    )  # ReLU saves its output (also W_2's input); GELU its input too
    stats = 2 * bt  # a LayerNorm's mean and 1/std per position
    # per block: its input (W_Q/W_K/W_V's), q, k, v, the attention output (W_O's input), the first LayerNorm's input
    # and stats, the FFN's input (the first LayerNorm's output in post-LN, the second's in pre-LN), the FFN hidden
    # layer, the second LayerNorm's input and stats; pre-LN moves the norms in front but saves as many tensors
    block = 8 * n + hidden + 2 * stats
    if explicit:
        block += 2 * heads * batch * seq * seq  # softmax(QKᵀ/√d_k) and its masked copy, read by A·V
    else:
        block += heads * bt  # the fused kernel's log-sum-exp per query row
    if c.positions == "rope":
        block += 4 * seq * (d // heads // 2)  # cos and sin tables for q and for k
        if not explicit:  # the kernel's output takes the rotated q's (B, H, T, d_k) layout, so W_O's input is a copy
            block += n
    bools = c.n_layers * (seq * seq + seq) if explicit else 0  # the causal mask and its "row reads anything" column
    final = (2 * n + stats) if c.norm_first else n  # pre-LN: ln_f's input, stats and output; post-LN: the head's input
    loss = bt * c.vocab_size + 1  # log-softmax output, and nll_loss's total weight (one float)
    ints = 8 * (bt + bt + (seq if c.positions == "learned" else 0))  # int64 token ids, targets, position ids
    return e * (c.n_layers * block + final + loss) + bools + ints


def inference_bytes(config, context: int | None = None, batch: int = 1, dtype: str = "fp16") -> int:
    """Weights plus the KV cache, both in `dtype` (activations of one decoding step are left out: they are
    a few vectors per sequence)."""
    return count_params(config) * DTYPE_BYTES[dtype] + kv_cache_of(config, context, batch, dtype)


def sequences_that_fit(card_bytes: float, config, context: int | None = None, dtype: str = "fp16") -> int:
    """How many sequences of `context` tokens fit beside the weights on a card of `card_bytes`: 0 when the
    weights alone do not fit. An upper bound: a real server also needs workspace and fragmentation room."""
    free = card_bytes - count_params(config) * DTYPE_BYTES[dtype]
    per_sequence = kv_cache_of(config, context, 1, dtype)
    return max(0, math.floor(free / per_sequence))


def training_bytes(
    config, seq: int | None = None, batch: int = 1, precision: str = "mixed", recompute_attention: bool = False
) -> dict[str, int]:
    """Training memory by part for a model of this shape: the state (16 bytes a parameter) and the activations by
    Korthikanti et al.'s formula (16-bit for mixed, 4-byte tensors for fp32)."""
    a: Architecture = architecture_of(config)
    s = a.context if seq is None else seq
    n = count_params(a)
    state = {part: n * b for part, b in per_param_bytes(precision).items()}
    element = 2 if precision == "mixed" else 4
    acts = korthikanti_activation_bytes(
        a.layers + a.encoder_layers, s, batch, a.d_model, a.heads, element, recompute_attention
    )
    return {**state, "activations": acts, "total": sum(state.values()) + acts}

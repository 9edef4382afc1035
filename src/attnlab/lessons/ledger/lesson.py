"""The shape ledger: for n tokens, every matrix's shape, what runs in parallel, and the cost of one layer.

Counted in multiply-adds for one layer of multi-head self-attention plus its FFN (d_ff = 4d):
  Q, K, V projections 3 n d^2, scores Q K^T n^2 d, weighted values A V n^2 d, output projection W_O n d^2,
  FFN 2 * n * d * 4d = 8 n d^2.
So the attention matrix costs 2 n^2 d and everything else 12 n d^2: O(n^2 d) + O(n d^2), and the n^2 term
wins once n > 6d. Training sees all n rows at once (one matrix product per step); generation must wait for
token t before it can compute row t+1, so it takes n sequential steps, each reading a cache of t keys.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.lessons.common.bad_input import BadInput, shown

MAX_N = 10_000_000
MAX_D = 1_000_000


@dataclass
class LedgerRow:
    name: str  # the symbol, e.g. "W_Q", "S = QK^T/sqrt(d_k)"
    shape_symbols: list[str]  # e.g. ["n", "d_k"]
    shape: list[int]  # the same with this n, d, h
    per_head: bool  # one copy per head
    train: str  # "weights" (fixed, shared by all positions) | "rows" (all n rows at once)
    generate: str  # "weights" | "new_row" (one row per new token) | "cache" (grows by one row a step)
    # | "new_row_grows" (row t has t entries)


@dataclass
class LayerCost:
    qkv_projections: int  # 3 n d^2
    scores: int  # n^2 d (all heads together: h * n^2 * d_k)
    weighted_values: int  # n^2 d
    output_projection: int  # n d^2
    ffn: int  # 8 n d^2
    attention_matrix: int  # 2 n^2 d, the O(n^2 d) part
    dense: int  # 12 n d^2, the O(n d^2) part
    total: int
    attention_share: float  # attention_matrix / total
    crossover_n: int  # n where 2 n^2 d = 12 n d^2, i.e. 6d
    generation_step: int  # one new token at position n with a KV cache: 2 n d + 12 d^2


@dataclass
class Ledger:
    n: int
    d_model: int
    heads: int
    d_k: int
    d_ff: int
    rows: list[LedgerRow]
    cost: LayerCost
    train_sequential_steps: int  # per layer, training a known sequence: 1
    generate_sequential_steps: int  # generating n tokens: n


def _int(value, name: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        text = str(value).strip()
        if not (len(text) <= 20 and text.lstrip("+-").isdigit()):  # a 5000-digit paste is refused by its look
            raise BadInput("toy.err.whole", name, name=name, lo=lo, hi=f"{hi:,}", got=shown(value))
        value = int(text)
    if not lo <= value <= hi:
        raise BadInput("toy.err.whole", name, name=name, lo=lo, hi=f"{hi:,}", got=shown(value))
    return value


def shape_ledger(n: int = 4, d_model: int = 4, heads: int = 2) -> Ledger:
    """Every matrix of one attention layer (+ FFN) for n tokens of width d_model split into `heads` heads."""
    n = _int(n, "n", 1, MAX_N)
    d = _int(d_model, "d_model", 1, MAX_D)
    h = _int(heads, "heads", 1, d)
    if d % h:
        raise BadInput("toy.err.divide", "heads", h_name="heads", d_name="d_model", d=d, h=h)
    d_k, d_ff = d // h, 4 * d
    sizes = {"n": n, "d": d, "d_k": d_k, "h·d_k": h * d_k, "4d": d_ff, "1": 1}
    spec = [
        ("X", ["n", "d"], False, "rows", "new_row"),
        ("W_Q, W_K, W_V", ["d", "d_k"], True, "weights", "weights"),
        ("Q", ["n", "d_k"], True, "rows", "new_row"),
        ("K, V", ["n", "d_k"], True, "rows", "cache"),
        ("S = QK^T / sqrt(d_k)", ["n", "n"], True, "rows", "new_row_grows"),
        ("A = softmax(S)", ["n", "n"], True, "rows", "new_row_grows"),
        ("O = A V", ["n", "d_k"], True, "rows", "new_row"),
        ("concat(O_1..O_h)", ["n", "h·d_k"], False, "rows", "new_row"),
        ("W_O", ["h·d_k", "d"], False, "weights", "weights"),
        ("FFN W_1", ["d", "4d"], False, "weights", "weights"),  # x W_1: d -> 4d
        ("FFN W_2", ["4d", "d"], False, "weights", "weights"),  # relu(x W_1) W_2: 4d -> d
        ("output", ["n", "d"], False, "rows", "new_row"),
    ]
    rows = [
        LedgerRow(name, sym, [sizes[s] for s in sym], per_head, train, gen) for name, sym, per_head, train, gen in spec
    ]
    qkv, scores, mixv, out, ffn = 3 * n * d * d, n * n * d, n * n * d, n * d * d, 8 * n * d * d
    attn, dense = scores + mixv, qkv + out + ffn
    cost = LayerCost(
        qkv_projections=qkv,
        scores=scores,
        weighted_values=mixv,
        output_projection=out,
        ffn=ffn,
        attention_matrix=attn,
        dense=dense,
        total=attn + dense,
        attention_share=attn / (attn + dense),
        crossover_n=6 * d,
        generation_step=2 * n * d + 12 * d * d,
    )
    return Ledger(n, d, h, d_k, d_ff, rows, cost, train_sequential_steps=1, generate_sequential_steps=n)

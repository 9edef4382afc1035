"""Two rows of the cost ledger beside attention: the RNN layer's O(n d^2), and the FFN's share of a block's
parameters.

RNN layer (h_t = tanh(W_h h_{t-1} + W_x x_t + b), d_in = d): per step two d x d matrix-vector products,
2 d^2 multiply-adds = 4 d^2 FLOPs, so n steps cost 4 n d^2 FLOPs, in n steps one after another.
Attention layer: Q, K, V, O projections 4 n d^2 multiply-adds (8 n d^2 FLOPs), scores and weighted sum
2 n^2 d multiply-adds (4 n^2 d FLOPs), in one parallel step. Attention's n^2 d part equals the RNN's whole
4 n d^2 exactly at n = d. FLOPs are read with torch's FlopCounterMode on our own RNN and Block (meta
tensors: shapes only).

Parameters of one block (biases on): attention 4 d^2 + 4 d, FFN 2 d d_ff + d_ff + d, two LayerNorms 4 d.
The weight matrices alone: FFN 2 d d_ff of 4 d^2 + 2 d d_ff, which is 8 d^2 / 12 d^2 = 2/3 at d_ff = 4 d.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

RNN_COUNT_STEPS = 8  # the RNN is n identical steps: counting a few of them gives the per-step cost


@dataclass
class RNNRow:
    n: int
    d: int
    rnn_flops: int  # 4 n d^2: n steps of W_h h and W_x x
    rnn_step_counted: int  # FlopCounterMode on our RNN: FLOPs of RNN_COUNT_STEPS steps / RNN_COUNT_STEPS
    rnn_serial_steps: int  # n: step t waits for step t-1
    attention_flops: int  # 8 n d^2 + 4 n^2 d, one attention layer
    attention_linear: int  # 8 n d^2 (the projections)
    attention_quadratic: int  # 4 n^2 d (scores and weighted sum)
    attention_serial_steps: int  # 1: every position at once
    crossover_n: int  # = d: attention's n^2 d part equals the RNN's n d^2 FLOPs
    crossover_attention_counted: int  # FlopCounterMode: scores + weighted sum of our Block at n = d
    crossover_rnn: int  # the RNN's FLOPs at n = d: d steps of the counted step


@dataclass
class ParamShare:
    d: int
    d_ff: int
    attention: int  # counted: parameters of Block.attn (W_Q, W_K, W_V, W_O and their biases)
    ffn: int  # counted: Block.ffn (W_1 d x d_ff, W_2 d_ff x d, biases)
    norms: int  # counted: the two LayerNorms' gamma and beta
    total: int
    ffn_share: float  # ffn / total, biases and norms included
    weights_attention: int  # the weight matrices alone: 4 d^2
    weights_ffn: int  # 2 d d_ff
    weights_share: float  # 2 d d_ff / (4 d^2 + 2 d d_ff): 2/3 at d_ff = 4 d
    formula_total: int  # 4 d^2 + 4 d + 2 d d_ff + d_ff + d + 4 d


def rnn_step_flops(d: int) -> int:
    """FLOPs of one step of our RNN (d_in = d), read by FlopCounterMode over RNN_COUNT_STEPS steps."""
    from attnlab.lessons.complexity.flops import flop_counter
    from attnlab.nn.recurrent import RNN

    with torch.device("meta"):
        rnn = RNN(d, d)
        x = torch.empty(1, RNN_COUNT_STEPS, d)  # (B, T, d_in)
    with flop_counter() as counter:
        rnn(x)
    return int(counter.get_total_flops()) // RNN_COUNT_STEPS


def rnn_row(n: int, d: int, h: int, attention_bmm_at) -> RNNRow:
    """`attention_bmm_at(n)`: the counted scores + weighted-sum FLOPs of our Block at length n."""
    step = rnn_step_flops(d)
    return RNNRow(
        n=n,
        d=d,
        rnn_flops=4 * n * d * d,
        rnn_step_counted=step,
        rnn_serial_steps=n,
        attention_flops=8 * n * d * d + 4 * n * n * d,
        attention_linear=8 * n * d * d,
        attention_quadratic=4 * n * n * d,
        attention_serial_steps=1,
        crossover_n=d,
        crossover_attention_counted=attention_bmm_at(d),
        crossover_rnn=d * step,
    )


def param_share(d: int, h: int, d_ff: int) -> ParamShare:
    """Parameter counts read off a real attnlab.nn.Block (meta tensors: no memory)."""
    from attnlab.nn import Block

    with torch.device("meta"):
        block = Block(d, h, d_ff)
    count = lambda module: sum(p.numel() for p in module.parameters())  # noqa: E731
    weights = lambda module: sum(p.numel() for p in module.parameters() if p.dim() == 2)  # noqa: E731
    attention, ffn = count(block.attn), count(block.ffn)
    total = count(block)
    w_attn, w_ffn = weights(block.attn), weights(block.ffn)
    return ParamShare(
        d=d,
        d_ff=d_ff,
        attention=attention,
        ffn=ffn,
        norms=total - attention - ffn,
        total=total,
        ffn_share=ffn / total,
        weights_attention=w_attn,
        weights_ffn=w_ffn,
        weights_share=w_ffn / (w_attn + w_ffn),
        formula_total=4 * d * d + 4 * d + 2 * d * d_ff + d_ff + d + 4 * d,
    )

"""Transformer building blocks written out in PyTorch, one concept a file."""

from attnlab.nn.attention import attention, causal_mask, sdpa_attention
from attnlab.nn.block import Block, DecoderBlock
from attnlab.nn.feedforward import FeedForward
from attnlab.nn.flash import flash_attention
from attnlab.nn.layernorm import LayerNorm
from attnlab.nn.masks import block_sparse_mask, sliding_window_mask
from attnlab.nn.moe import MoE
from attnlab.nn.multihead import KVCache, LayerKVCache, MultiHeadAttention
from attnlab.nn.positions import LearnedPositions, RotaryEmbedding, SinusoidalPositions, sinusoidal_positions
from attnlab.nn.recurrent import GRU, LSTM, RNN, AdditiveAttention

__all__ = [
    "attention",
    "causal_mask",
    "sdpa_attention",
    "flash_attention",
    "sliding_window_mask",
    "block_sparse_mask",
    "MultiHeadAttention",
    "KVCache",
    "LayerKVCache",
    "FeedForward",
    "MoE",
    "LayerNorm",
    "sinusoidal_positions",
    "SinusoidalPositions",
    "LearnedPositions",
    "RotaryEmbedding",
    "Block",
    "DecoderBlock",
    "RNN",
    "GRU",
    "LSTM",
    "AdditiveAttention",
]

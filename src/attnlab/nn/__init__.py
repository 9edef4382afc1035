"""Transformer building blocks written out in PyTorch, one concept a file."""

from attnlab.nn.attention import attention, causal_mask, sdpa_attention

__all__ = ["attention", "causal_mask", "sdpa_attention"]

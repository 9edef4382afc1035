"""Communication vs computation: only attention moves information between positions."""

import torch
from torch.autograd.functional import jacobian

from attnlab.nn import FeedForward, LayerNorm, MultiHeadAttention

T, D = 5, 8


def cross_position_blocks(fn):
    """Jacobian d y_i / d x_j of fn on a (T, D) input, as a (T, T) grid of block norms."""
    torch.manual_seed(0)
    x = torch.randn(T, D, dtype=torch.float64)
    J = jacobian(fn, x)  # (T, D, T, D)
    return J.permute(0, 2, 1, 3).flatten(2).norm(dim=-1)  # (T, T)


def off_diagonal(grid):
    return grid[~torch.eye(T, dtype=torch.bool)]


def test_ffn_off_diagonal_blocks_are_exactly_zero():
    ffn = FeedForward(D).double()
    grid = cross_position_blocks(ffn)
    assert (off_diagonal(grid) == 0).all()
    assert (grid.diagonal() > 0).all()


def test_layernorm_off_diagonal_blocks_are_exactly_zero():
    ln = LayerNorm(D, explicit=True).double()
    grid = cross_position_blocks(ln)
    assert (off_diagonal(grid) == 0).all()
    assert (grid.diagonal() > 0).all()


def test_attention_off_diagonal_blocks_are_not_zero():
    mha = MultiHeadAttention(D, 2).double()
    grid = cross_position_blocks(lambda x: mha(x.unsqueeze(0))[0].squeeze(0))
    assert (off_diagonal(grid) > 1e-6).all()


def test_causal_attention_blocks_above_the_diagonal_are_zero():
    mha = MultiHeadAttention(D, 2).double()
    grid = cross_position_blocks(lambda x: mha(x.unsqueeze(0), causal=True)[0].squeeze(0))
    future = torch.ones(T, T, dtype=torch.bool).triu(1)  # output i, input j > i
    assert (grid[future] == 0).all()
    assert (grid[~future] > 0).all()

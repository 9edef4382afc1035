"""Positions: the 2017 formula, the rotation property, RoPE's relative property, permutation equivariance."""

import math

import pytest
import torch

from attnlab.nn import MultiHeadAttention, RotaryEmbedding, sinusoidal_positions


def test_sinusoidal_matches_the_formula_entry_by_entry():
    n, d = 50, 16
    pe = sinusoidal_positions(n, d).double()
    for pos in (0, 1, 7, 49):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_odd_width_and_bad_arguments():
    assert sinusoidal_positions(5, 7).shape == (5, 7)
    with pytest.raises(ValueError, match="d_model > 0"):
        sinusoidal_positions(5, 0)


@pytest.mark.parametrize("delta", [1, 5, 37])
def test_shift_by_delta_is_a_rotation_that_depends_only_on_delta(delta):
    n, d = 200, 32
    torch.set_default_dtype(torch.float64)
    try:
        pe = sinusoidal_positions(n + delta, d)
    finally:
        torch.set_default_dtype(torch.float32)
    omega = torch.tensor([10000 ** (-2 * i / d) for i in range(d // 2)], dtype=torch.float64)
    c, s = torch.cos(omega * delta), torch.sin(omega * delta)
    # One 2x2 rotation per frequency, built from delta alone, applied to every position.
    sin_pos, cos_pos = pe[:n, 0::2], pe[:n, 1::2]
    rotated_sin = c * sin_pos + s * cos_pos
    rotated_cos = -s * sin_pos + c * cos_pos
    assert (rotated_sin - pe[delta:, 0::2]).abs().max() < 1e-6
    assert (rotated_cos - pe[delta:, 1::2]).abs().max() < 1e-6


def test_rope_scores_depend_only_on_relative_offset():
    torch.manual_seed(0)
    rope = RotaryEmbedding(8)
    q, k = torch.randn(1, 1, 1, 8, dtype=torch.float64), torch.randn(1, 1, 1, 8, dtype=torch.float64)
    dots = [(rope(q, offset=m) * rope(k, offset=m - 3)).sum().item() for m in (3, 10, 50)]
    assert dots[0] == pytest.approx(dots[1], abs=1e-9) == pytest.approx(dots[2], abs=1e-9)
    assert torch.allclose(rope(q, offset=0), q)  # position 0 is not rotated
    assert torch.allclose(rope(q, offset=5).norm(), q.norm())  # rotations keep lengths


def self_attention_outputs(x, mha):
    out, _ = mha(x)
    return out


def test_self_attention_without_positions_is_permutation_equivariant():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).eval()
    x = torch.randn(1, 6, 16)
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    f_of_px = self_attention_outputs(x[:, perm], mha)
    p_of_fx = self_attention_outputs(x, mha)[:, perm]
    assert (f_of_px - p_of_fx).abs().max() < 1e-5


def test_with_positions_added_it_is_not():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).eval()
    x = torch.randn(1, 6, 16)
    pe = sinusoidal_positions(6, 16)
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    f_of_px = self_attention_outputs(x[:, perm] + pe, mha)
    p_of_fx = self_attention_outputs(x + pe, mha)[:, perm]
    assert (f_of_px - p_of_fx).abs().max() > 1e-2

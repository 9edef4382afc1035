"""attention(): closed-form values, the fused path, masks, and properties over random shapes."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.nn import attention, causal_mask, sdpa_attention


def one_query(scores, values):
    """Build q, k so that q.k_j / sqrt(d_k) equals the given scores (d_k = 1 makes sqrt(d_k) = 1)."""
    q = torch.tensor([[1.0]], dtype=torch.float64)  # (T_q=1, d_k=1)
    k = torch.tensor([[s] for s in scores], dtype=torch.float64)  # (T_k, 1)
    v = torch.tensor(values, dtype=torch.float64)  # (T_k, d_v)
    return q, k, v


def test_scores_0_ln3_give_quarter_three_quarters():
    q, k, v = one_query([0.0, math.log(3)], [[2.0, 0.0], [0.0, 2.0]])
    out, weights = attention(q, k, v)
    assert torch.allclose(weights, torch.tensor([[0.25, 0.75]], dtype=torch.float64), atol=1e-15)
    assert torch.allclose(out, torch.tensor([[0.5, 1.5]], dtype=torch.float64), atol=1e-15)


def test_changing_v2_moves_output_by_a2_times_delta():
    q, k, v = one_query([0.0, math.log(3)], [[2.0, 0.0], [0.0, 4.0]])
    out, weights = attention(q, k, v)
    assert torch.allclose(weights, torch.tensor([[0.25, 0.75]], dtype=torch.float64), atol=1e-15)
    assert torch.allclose(out, torch.tensor([[0.5, 3.0]], dtype=torch.float64), atol=1e-15)


def test_scaling_is_by_sqrt_dk():
    q = torch.ones(1, 4, dtype=torch.float64)
    k = torch.tensor([[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
    _, weights = attention(q, k, torch.eye(2, dtype=torch.float64))
    # score_1 = 4 / sqrt(4) = 2, score_2 = 0
    expected = torch.tensor([math.exp(2), 1.0]) / (math.exp(2) + 1.0)
    assert torch.allclose(weights[0], expected.double(), atol=1e-15)


def test_masked_scores_are_minus_inf_and_weights_exactly_zero():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 4, 5, 8), torch.randn(2, 4, 5, 8)
    recorded = {}
    out, weights = attention(q, k, v, causal_mask(5), record=lambda n, t: recorded.__setitem__(n, t))
    upper = ~causal_mask(5)
    assert torch.isinf(recorded["masked_scores"][..., upper]).all()
    assert (weights[..., upper] == 0).all()
    assert (weights[..., 0, 0] == 1).all()  # position 1 reads exactly one key


@pytest.mark.parametrize("t_q, t_k", [(6, 6), (2, 6)])
def test_causal_flag_equals_the_causal_mask(t_q, t_k):
    torch.manual_seed(3)
    q, k, v = torch.randn(2, t_q, 8), torch.randn(2, t_k, 8), torch.randn(2, t_k, 8)
    by_mask, w_mask = attention(q, k, v, causal_mask(t_q, t_k))
    by_flag, w_flag = attention(q, k, v, causal=True)
    assert torch.equal(w_mask, w_flag) and torch.equal(by_mask, by_flag)
    assert torch.allclose(attention(q, k, v, causal=True, need_weights=False)[0], by_mask, atol=1e-6)
    padding = torch.tensor([True] * (t_k - 1) + [False])
    both, _ = attention(q, k, v, padding, causal=True)
    assert torch.allclose(attention(q, k, v, padding, causal=True, need_weights=False)[0], both, atol=1e-6)


def test_fully_masked_row_reads_nothing():
    q, k, v = torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4)
    mask = torch.tensor([[True, False, False], [False, False, False], [True, True, True]])
    out, weights = attention(q, k, v, mask)
    assert (weights[1] == 0).all() and (out[1] == 0).all()
    assert torch.allclose(sdpa_attention(q, k, v, mask), out, atol=1e-6)


@pytest.mark.parametrize("masking", ["none", "causal", "padding", "random"])
def test_explicit_and_sdpa_paths_agree(masking):
    torch.manual_seed(1)
    B, H, T, d = 2, 3, 7, 16
    q, k, v = torch.randn(B, H, T, d), torch.randn(B, H, T, d), torch.randn(B, H, T, d)
    mask = {
        "none": None,
        "causal": causal_mask(T),
        "padding": torch.tensor([[True] * 5 + [False] * 2, [True] * 7])[:, None, None, :],
        "random": (torch.rand(B, H, T, T) > 0.4) | torch.eye(T, dtype=torch.bool),
    }[masking]
    explicit, weights = attention(q, k, v, mask)
    fused, none = attention(q, k, v, mask, need_weights=False)
    assert none is None
    assert torch.allclose(explicit, fused, atol=1e-5)


def test_bad_inputs_name_what_was_expected():
    q, k, v = torch.randn(4, 8), torch.randn(4, 8), torch.randn(4, 8)
    with pytest.raises(ValueError, match=r"mask shape \(3, 3\).*\(4, 4\)"):
        attention(q, k, v, torch.ones(3, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="bool"):
        attention(q, k, v, torch.ones(4, 4))
    with pytest.raises(ValueError, match="same last dim"):
        attention(q, torch.randn(4, 7), v)
    with pytest.raises(ValueError, match="same number of keys"):
        attention(q, k, torch.randn(5, 8))


@settings(max_examples=60, deadline=None)
@given(
    B=st.integers(1, 3),
    H=st.integers(1, 3),
    T_q=st.integers(1, 6),
    T_k=st.integers(1, 6),
    d_k=st.integers(1, 8),
    d_v=st.integers(1, 5),
    seed=st.integers(0, 2**16),
    use_mask=st.booleans(),
)
def test_weights_are_a_probability_over_allowed_keys(B, H, T_q, T_k, d_k, d_v, seed, use_mask):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, T_q, d_k, generator=g, dtype=torch.float64) * 3
    k = torch.randn(B, H, T_k, d_k, generator=g, dtype=torch.float64) * 3
    v = torch.randn(B, H, T_k, d_v, generator=g, dtype=torch.float64)
    mask = torch.rand(B, H, T_q, T_k, generator=g) > 0.5 if use_mask else None
    _, weights = attention(q, k, v, mask)
    assert (weights >= 0).all()
    sums = weights.sum(-1)
    readable = mask.any(-1) if mask is not None else torch.ones_like(sums, dtype=torch.bool)
    assert torch.allclose(sums[readable], torch.ones_like(sums[readable]), atol=1e-12)
    assert (sums[~readable] == 0).all()
    if mask is not None:
        assert (weights[~mask] == 0).all()

"""Each quantitative claim of the concept lessons, held against closed forms, numpy and torch's own layers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.lessons.common.claims import weakest
from attnlab.lessons.common.params import ParamError
from attnlab.lessons.complexity.lesson import analytic_terms, complexity, counted
from attnlab.lessons.forms.lesson import forms
from attnlab.lessons.multihead.lesson import INPUTS, TARGETS, AttentionOnly, count, hand_built, multihead
from attnlab.lessons.permutation.lesson import permutation
from attnlab.lessons.position_wise.lesson import build, position_wise
from attnlab.lessons.positional.lesson import pe_table, positional
from attnlab.lessons.rnn_gradients.lesson import jacobians_to_last, rnn_gradients, spectral_norms
from attnlab.lessons.serial_vs_parallel.lesson import serial_vs_parallel
from attnlab.lessons.sqrt_dk.lesson import jacobian_bound, softmax_jacobian_norm, sqrt_dk


def claims(result) -> dict:
    return {c.id: c for c in result.claims}


# ------------------------------------------------------------------------------------------------- sqrt-dk
def test_variance_of_q_dot_k_is_d_k_within_5_percent():
    r = sqrt_dk(d_k=64, n_samples=50000)
    for s in r.sweep:  # d_k = 1 .. 512 at 50000 pairs each
        assert abs(s.var / s.d_k - 1) < 0.05, (s.d_k, s.var)
        assert abs(s.scaled_var - 1) < 0.05
        assert abs(s.mean) < 4 * math.sqrt(s.d_k / 50000)
    assert all(c.holds for c in r.claims)


def test_unscaled_softmax_saturates_and_its_gradient_vanishes_at_large_d_k():
    r = sqrt_dk(d_k=256, n_samples=2000, n_keys=16)
    big = r.softmax_sweep[-1]  # d_k = 512
    assert big.max_weight_unscaled > 0.8 > big.max_weight_scaled
    assert big.entropy_unscaled < big.entropy_scaled <= math.log(16)
    assert big.grad_norm_unscaled < 0.5 * big.grad_norm_scaled
    for s in r.softmax_sweep:  # softmax(beta s) sharpens monotonically in beta = 1 vs 1/sqrt(d_k)
        assert s.max_weight_unscaled >= s.max_weight_scaled - 1e-12
    assert sum(r.example_unscaled) == pytest.approx(1) and sum(r.example_scaled) == pytest.approx(1)


def test_softmax_jacobian_norm_matches_autograd_and_numpy_even_near_one_hot():
    g = torch.Generator().manual_seed(0)
    s = torch.cat(
        [torch.randn(5, 7, generator=g, dtype=torch.float64), 30 * torch.randn(5, 7, generator=g, dtype=torch.float64)]
    )  # the last rows are near one-hot
    p = torch.softmax(s, -1).numpy()
    closed = [np.linalg.norm(np.diag(row) - np.outer(row, row)) for row in p]  # J = diag(p) - p p^T
    by_autograd = [
        torch.linalg.matrix_norm(torch.autograd.functional.jacobian(lambda r: torch.softmax(r, -1), row)).item()
        for row in s
    ]
    np.testing.assert_allclose(
        softmax_jacobian_norm(s).numpy(), by_autograd, rtol=1e-4, atol=1e-15
    )  # autograd rounds near one-hot
    np.testing.assert_allclose(softmax_jacobian_norm(s[:5]).numpy(), closed[:5], rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(scale=st.floats(0.0, 60.0), n=st.integers(2, 40), seed=st.integers(0, 1000))
def test_softmax_jacobian_norm_is_at_most_its_trace_and_twice_the_distance_to_one_hot(scale, n, seed):
    s = scale * torch.randn(3, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    p = torch.softmax(s, -1)
    norm, bound = softmax_jacobian_norm(s), jacobian_bound(s)
    assert torch.all(norm <= bound * (1 + 1e-9))
    assert torch.all(bound <= 2 * (1 - p.max(-1).values) + 1e-12)
    assert torch.allclose(bound, 1 - (p**2).sum(-1), atol=1e-12)


def test_sqrt_dk_gradient_threshold_moves_up_with_the_number_of_keys():
    few, default, many = (sqrt_dk(d_k=64, n_samples=500, n_keys=k) for k in (2, 32, 1024))
    assert few.grad_threshold is not None and default.grad_threshold is not None
    assert few.grad_threshold <= default.grad_threshold
    assert many.grad_threshold is None  # with 1024 keys, up to d_k = 512 the unscaled gradient is still larger
    # with 1024 keys the course's "the gradient fades" is contradicted at d_k = 64, and the claim says so
    assert {c.id: c.status for c in many.claims if c.status != "shown"} == {"gradient_fades": "contradicted"}
    for r in (few, default, many):
        assert all(c.holds for c in r.claims if c.id != "gradient_fades" or r is not many)
        below = [m.grad_norm_unscaled < m.grad_norm_scaled for m in r.softmax_sweep]
        if r.grad_threshold is not None:  # from the threshold on, every sweep point is below
            i = [m.d_k for m in r.softmax_sweep].index(r.grad_threshold)
            assert all(below[i:]) and (i == 0 or not below[i - 1])
        assert r.uniform_grad_norm == pytest.approx(math.sqrt(1 / r.params["n_keys"] - 1 / r.params["n_keys"] ** 2))


# ---------------------------------------------------------------------------------------------- positional
def test_rotation_error_is_below_1e_6_and_the_layer_matches_the_formula():
    r = positional(n_positions=32, d_model=32, delta=7, n_check=2000)
    assert r.max_rotation_error < 1e-6
    assert r.layer_max_diff < 1e-6
    assert all(c.holds for c in r.claims)
    assert len(r.table) == 32 and len(r.table[0]) == 32


@settings(max_examples=25, deadline=None)
@given(pos=st.integers(0, 5000), delta=st.integers(0, 500), i=st.integers(0, 15))
def test_rotation_property_against_math_sin_cos(pos, delta, i):
    d = 32
    omega = 10000.0 ** (-2 * i / d)
    c, s = math.cos(omega * delta), math.sin(omega * delta)
    R = np.array([[c, s], [-s, c]])
    here = np.array([math.sin(omega * pos), math.cos(omega * pos)])
    there = np.array([math.sin(omega * (pos + delta)), math.cos(omega * (pos + delta))])
    assert np.abs(R @ here - there).max() < 1e-9
    table = pe_table(pos + 1, d)
    assert table[pos, 2 * i] == pytest.approx(here[0], abs=1e-9) and table[pos, 2 * i + 1] == pytest.approx(
        here[1], abs=1e-9
    )


# --------------------------------------------------------------------------------------------- permutation
def test_permutation_equivariant_without_positions_not_with():
    r = permutation()
    assert r.without_positions.max_diff < 1e-5
    assert r.with_positions.max_diff > 1e-2
    assert r.pair["without_positions"]["max_diff"] < 1e-5 < 1e-2 < r.pair["with_positions"]["max_diff"]
    assert sorted(r.shuffled) == sorted(r.tokens) and r.shuffled != r.tokens
    assert all(c.holds for c in r.claims)


@settings(max_examples=8, deadline=None)
@given(
    text=st.text(alphabet="床前明月光疑是地上霜", min_size=2, max_size=10).filter(lambda s: len(set(s)) > 1),
    seed=st.integers(0, 1000),
)
def test_permutation_property_for_any_sentence(text, seed):
    r = permutation(sentence=text, seed=seed, d_model=8, n_heads=2)
    assert r.without_positions.max_diff < 1e-5
    assert r.with_positions.max_diff > 1e-2


def test_permutation_rejects_a_sentence_no_shuffle_changes():
    with pytest.raises(ParamError, match="unchanged"):
        permutation(sentence="明明明")
    with pytest.raises(ParamError, match="at least 2"):
        permutation(sentence="明")


# ----------------------------------------------------------------------------------------------- multihead
def test_one_wide_head_and_h_narrow_heads_cost_the_same():
    for d, h, n in ((64, 4, 10), (48, 6, 33), (512, 8, 128)):
        one, many = count(d, 1, n), count(d, h, n)
        assert one.params == many.params == 4 * d * d + 4 * d
        assert one.flops == many.flops == 8 * n * d * d + 4 * n * n * d
        assert many.weight_entries == h * one.weight_entries


def test_torch_multihead_attention_has_the_same_parameter_count():
    mha = torch.nn.MultiheadAttention(64, 4)  # the reference layer, never used in the product
    assert sum(p.numel() for p in mha.parameters()) == count(64, 4, 8).params


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.sampled_from([1.0, 10.0, 100.0]))
def test_no_one_head_model_gets_more_than_6_of_the_8_xor_sequences(seed, scale):
    """The proof's claim, held against random one-head models with weights from small to huge (sharp softmaxes)."""
    torch.manual_seed(seed)
    m = AttentionOnly(1)
    with torch.no_grad():
        for q in m.parameters():
            q.normal_(0, scale)
        logits, _ = m(INPUTS)
    assert (logits.argmax(-1) == TARGETS).sum().item() <= 6


def test_two_heads_set_by_hand_compute_xor_one_looking_at_the_ones_one_at_the_zeros():
    m = hand_built()
    logits, w = m(INPUTS)
    assert torch.equal(logits.argmax(-1), INPUTS[:, 0] ^ INPUTS[:, 1])
    r = multihead(d_model=32, n_heads=4, n=8, train_steps=0)
    assert r.hand_built_accuracy == 1.0 and [h.kind for h in r.hand_built_heads] == ["ones", "zeros"]
    assert r.runs == [] and all(c.holds for c in r.claims)


@pytest.mark.slow  # trains heads over ten seeds
def test_trained_heads_one_never_solves_xor_more_heads_do_counted_over_ten_seeds():
    r = multihead(d_model=64, n_heads=4, n=16, train_steps=100)
    by = {run.n_heads: run for run in r.runs}
    assert all(a <= 0.75 for a in by[1].accuracies) and by[1].solved == 0
    assert by[4].solved >= 8 and by[2].solved >= 1  # measured: 10 and 5 of seeds 0-9
    assert r.seeds == list(range(10)) and all(len(run.accuracies) == 10 for run in r.runs)
    assert all(c.holds for c in r.claims)
    for h in r.heads:
        for row, _x in zip(h.weights, INPUTS.tolist()):
            assert sum(row) == pytest.approx(1, abs=1e-5)  # query 2 reads keys 0, 1, 2


# ------------------------------------------------------------------------------------------- position-wise
def test_only_attention_has_off_diagonal_jacobian_blocks():
    r = position_wise(n=4, d_model=6)
    by = {layer.layer: layer for layer in r.layers}
    for name in ("ffn", "layernorm", "residual"):
        grid = np.array(by[name].block_norms)
        assert (grid[~np.eye(4, dtype=bool)] == 0).all(), name  # exactly zero, not small
        assert (np.diag(grid) > 0).all()
    assert by["attention"].off_diagonal_max > 1e-3 and by["block"].off_diagonal_max > 1e-3
    assert all(c.holds for c in r.claims)


def test_the_neighbour_bug_breaks_the_invariant_exactly_at_i_minus_1():
    r = position_wise(n=4, d_model=6, bug=True)
    grid = np.array({layer.layer: layer for layer in r.layers}["ffn"].block_norms)
    below = np.eye(4, k=-1, dtype=bool)
    assert (grid[below] > 0).all()  # y_i now reads x_{i-1}
    assert (grid[~below & ~np.eye(4, dtype=bool)] == 0).all()
    assert not claims(r)["ffn_alone"].holds and claims(r)["layernorm_alone"].holds


def test_the_neighbour_bug_reaches_the_whole_block():
    n, d = 4, 6
    clean, buggy = (
        np.array({la.layer: la for la in position_wise(n=n, d_model=d, bug=b).layers}["block"].block_norms)
        for b in (False, True)
    )
    # y_0's neighbour is the zero pad, so its row stays; every later row reads x_{i-1} through the FFN and changes
    assert np.array_equal(clean[0], buggy[0])
    assert (np.abs(clean[1:] - buggy[1:]).max(axis=1) > 1e-6).all()

    # Independently, by the chain rule through the post-LN block, with the bug as the shift S in the FFN's input:
    # x1 = LN1(x + attn(x)), u = (I + S) x1, z = x1 + FFN(u), y = LN2(z);  dy/dx = J_LN2 (I + J_FFN (I + S)) J_x1
    _, _, _, block, x = build(n, d, 0, bug=False)
    jac = torch.autograd.functional.jacobian
    flat = n * d

    def J(fn, at):  # (n*d, n*d) Jacobian of a (n, d) -> (n, d) map
        return jac(lambda v: fn(v.view(1, n, d))[0].reshape(-1), at.reshape(-1)).reshape(flat, flat)

    x1_fn = lambda h: block.ln_1(h + block.attn(h)[0])  # noqa: E731
    with torch.no_grad():
        x1 = x1_fn(x[None])[0]
        shift = torch.kron(torch.diag(torch.ones(n - 1, dtype=torch.float64), -1), torch.eye(d, dtype=torch.float64))
        u = (x1.reshape(-1) + shift @ x1.reshape(-1)).view(n, d)
        z = x1 + block.ffn(u[None])[0]
    eye = torch.eye(flat, dtype=torch.float64)
    full = J(block.ln_2, z) @ (eye + J(block.ffn, u) @ (eye + shift)) @ J(x1_fn, x)
    expected = full.reshape(n, d, n, d).permute(0, 2, 1, 3).flatten(2).norm(dim=-1).numpy()
    np.testing.assert_allclose(buggy, expected, rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------------------------------- rnn-gradients
def test_rnn_gradient_norms_stay_under_the_bound():
    r = rnn_gradients(lam=0.9, steps=25, hidden=12)
    for c in [*r.curves, r.chosen]:
        for m, b in zip(c.measured, c.bound):
            assert m <= b * (1 + 1e-9)
        assert c.bound == pytest.approx([c.lam**k for k in range(1, 26)])
    assert claims(r)["rnn_bound"].holds and claims(r)["lstm_direct"].holds
    assert r.lstm.direct_check < 1e-12


def test_autograd_jacobian_equals_the_product_of_diag_tanh_prime_w():
    from attnlab.nn.recurrent import RNN

    torch.manual_seed(0)
    rnn = RNN(3, 5).double()
    x = torch.randn(1, 6, 3, dtype=torch.float64)
    h0 = torch.zeros(1, 5, dtype=torch.float64, requires_grad=True)
    _, states = rnn(x, h0)
    W = rnn.W_h.detach().numpy()
    hs = [s.detach().numpy()[0] for s in states]
    J = np.eye(5)
    expected = []
    for t in range(6, 0, -1):  # d h_6 / d h_k = prod_{i=k+1..6} diag(1 - h_i^2) W
        J = J @ np.diag(1 - hs[t] ** 2) @ W
        expected.append(J.copy())
    measured = jacobians_to_last(states)[::-1]  # k = 5, 4, ..., 0
    for got, want in zip(measured, expected):
        np.testing.assert_allclose(got.numpy(), want, atol=1e-12)
    np.testing.assert_allclose(spectral_norms(measured), [np.linalg.norm(w, 2) for w in expected], rtol=1e-9)


# -------------------------------------------------------------------------------------- serial-vs-parallel
def test_rnn_steps_grow_with_n_attention_does_not_and_paths_are_n_minus_1_and_1():
    r = serial_vs_parallel(n_max=64, d_model=8, n_heads=2, repeats=1)
    assert [p.n for p in r.points] == [16, 32, 64]
    for p in r.points:
        assert p.rnn_steps == p.n and p.attention_steps == 1
        assert p.rnn_path == p.n - 1 and p.attention_path == 1
    ops = [p.rnn_ops for p in r.points]
    assert ops[2] - ops[1] == 2 * (ops[1] - ops[0])  # linear in n
    assert len({p.attention_ops for p in r.points}) == 1
    assert all(c.holds for c in r.claims)


# ---------------------------------------------------------------------------------------------- complexity
@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 300), h=st.sampled_from([1, 2, 4]), k=st.integers(1, 16), ff=st.integers(1, 4))
def test_analytic_flops_equal_flop_counter_mode_on_our_block(n, h, k, ff):
    d = h * k
    c = counted(n, d, h, ff * d)
    terms = {t.name: t.flops for t in analytic_terms(n, d, ff * d)}
    assert c["qkv_projections"] == terms["qkv_projections"]
    assert c["output_projection"] == terms["output_projection"]
    assert c["scores+weighted_sum"] == terms["scores"] + terms["weighted_sum"]
    assert c["ffn"] == terms["ffn"]
    assert c["block"] == sum(terms.values())


def test_complexity_ledger_crossover_and_memory():
    r = complexity(n=100_000, d_model=256, n_heads=4, time_n_max=128, time_d_model=16, repeats=1)
    assert all(c.analytic == c.counted for c in r.checks)
    assert r.crossover_block == 2 * 256 + 4 * 256 and r.crossover_attention == 512
    assert r.weights_bytes == 4 * 4 * 100_000**2  # 160 GB: computed on meta tensors, never allocated
    assert r.time_weights_bytes == 4 * 4 * 128 * 128
    assert [p.n for p in r.time_points] == [64, 128] and math.isfinite(r.time_slope)
    assert all(c.holds for c in r.claims)


# --------------------------------------------------------------------------------------------------- forms
def test_decoder_only_block_has_no_cross_attention_and_masks_match_torch():
    from attnlab.models import GPT, GPTConfig
    from attnlab.nn import MultiHeadAttention

    r = forms(n_tgt=5, n_src=3)
    by = {f.name: f for f in r.forms}
    gpt_block = by["decoder-only"].blocks[0]
    assert gpt_block.attention_modules == ["attn"] and not gpt_block.has_cross_attention
    assert by["encoder-decoder"].blocks[1].attention_modules == ["self_attn", "cross_attn"]
    model = GPT(GPTConfig(vocab_size=8, context_length=8, d_model=8, n_heads=2, n_layers=2))
    assert sum(isinstance(m, MultiHeadAttention) for m in model.modules()) == 2  # one per block, none crossing
    assert not any("cross" in name for name, _ in model.named_modules())
    causal = torch.nn.Transformer.generate_square_subsequent_mask(5) == 0  # torch's own causal mask
    masks = {(f.name, m.name): m for f in r.forms for m in f.masks}
    assert masks[("decoder-only", "causal")].observed == causal.int().tolist()
    assert masks[("encoder-decoder", "cross")].observed == [[1] * 3] * 5
    assert all(c.holds for c in r.claims)


# --------------------------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: sqrt_dk(d_k=0), "d_k must be an integer from 1 to 1024, got 0"),
        (lambda: sqrt_dk(n_keys=1024, d_k=1024), "too large for memory"),
        (lambda: complexity(n=-5), "n must be an integer from 1"),
        (lambda: serial_vs_parallel(n_max=2048, n_heads=16, d_model=64), "768 MiB.*n_max can be at most 1672"),
        (lambda: serial_vs_parallel(n_max=4096), "n_max must be an integer from 16 to 2048"),
        (
            lambda: complexity(time_n_max=2048, n_heads=16, d_model=512, time_d_model=128),
            "time_n_max can be at most 1672",
        ),
        (lambda: positional(d_model=7), "even"),
        (lambda: multihead(d_model=64, n_heads=5), "divisible"),
        (lambda: rnn_gradients(lam=float("nan")), "lam must be a number"),
        (lambda: position_wise(bug="maybe"), "bug must be true or false"),
    ],
)
def test_bad_parameters_raise_clear_value_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("module", ["serial_vs_parallel", "complexity"])
def test_the_stated_memory_limit_is_the_real_one(module):
    from importlib import import_module

    from attnlab.lessons.common.params import MEMORY_LIMIT, largest_square

    lesson = import_module(f"attnlab.lessons.{module}.lesson")
    for h in (1, 4, 8, 10, 11, 16):
        n = largest_square(lesson.BYTES_PER_N2 * h)
        assert lesson.BYTES_PER_N2 * h * n * n <= MEMORY_LIMIT < lesson.BYTES_PER_N2 * h * (n + 1) ** 2
    assert (
        largest_square(lesson.BYTES_PER_N2 * lesson.FULL_HEADS)
        >= 2048
        > largest_square(lesson.BYTES_PER_N2 * (lesson.FULL_HEADS + 1))
    )


def test_the_advertised_largest_n_runs_with_the_default_heads():
    # the top of each range, with the default number of heads (small widths so it stays quick)
    r = serial_vs_parallel(n_max=2048, d_model=8, repeats=1)
    assert r.params["n_heads"] == 4 and r.points[-1].n == 2048
    r = complexity(n=64, d_model=64, time_n_max=2048, time_d_model=8, repeats=1)
    assert r.params["n_heads"] == 8 and r.time_points[-1].n == 2048
    assert r.time_weights_bytes == 4 * 8 * 2048**2


def test_weakest_reads_the_seed_nearest_zero_and_zero_where_the_seeds_disagree():
    assert weakest([0.3, 0.2, 0.25]) == 0.2
    assert weakest([-0.3, -0.15]) == -0.15
    assert weakest([0.3, -0.01]) == 0.0

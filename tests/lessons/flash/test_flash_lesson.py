"""The flash topic: its numbers against closed forms and brute force, and each claim on its null (the effect absent
by construction: an untiled loop, a loop that skips nothing, an approximation that drops weights, a mask of the
other kind, an SRAM too small), where it must not be shown. No test reads a clock: the timings are shown only."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from attnlab.lessons.common.params import ParamError
from attnlab.lessons.flash import lesson as FL
from attnlab.lessons.flash.claims import make_claims
from attnlab.lessons.flash.measure import PeakBytes, growth_order, memory_point, reached
from attnlab.nn import attention, block_sparse_mask, causal_mask, sliding_window_mask
from attnlab.nn.flash import computed_scores

pytestmark = pytest.mark.slow  # trains the lesson's models

SMALL = dict(n_max=512, block=64, window=32, layers=5)


@pytest.fixture(scope="module")
def small():
    return FL.flash(lang="en", **SMALL)


def status(claims, id_: str) -> str:
    return next(c.status for c in claims if c.id == id_)


def claims_with(r, **changed):
    """The lesson's claims redone from its numbers with some of them replaced."""
    args = dict(
        p=r.params,
        hand=r.hand,
        memory=r.memory,
        plain_growth=r.plain_growth,
        tiled_growth=r.tiled_growth,
        io=r.traffic,
        masks=r.masks,
        reach=r.reach,
        lang="en",
    )
    return make_claims(**{**args, **changed})


def test_every_claim_is_shown_at_these_settings_and_at_the_defaults(small):
    assert {c.id: c.status for c in small.claims} == {c.id: "shown" for c in small.claims}
    assert len(small.claims) == 8
    assert {c.status for c in FL.flash(lang="zh").claims} == {"shown"}


# ---------------------------------------------------------------------------------------------- by hand
def test_the_hand_table_is_the_online_softmax_recomputed_in_float64(small):
    h = small.hand
    q, k, v = np.array(h.q), np.array(h.k), np.array(h.v)
    scores = k @ q / math.sqrt(2)
    assert np.allclose(scores, h.scores, atol=1e-6)
    m, l, acc = -np.inf, 0.0, np.zeros(2)
    for s in h.steps:
        part = scores[s.first - 1 : s.last]
        new = max(m, part.max())
        rescale = math.exp(m - new) if m > -np.inf else 0.0
        l = rescale * l + np.exp(part - new).sum()
        acc = rescale * acc + np.exp(part - new) @ v[s.first - 1 : s.last]
        assert s.m_old == (None if m == -np.inf else pytest.approx(m, abs=1e-6))
        assert (s.m, s.rescale, s.l) == (
            pytest.approx(new, abs=1e-6),
            pytest.approx(rescale, abs=1e-6),
            pytest.approx(l, rel=1e-6),
        )
        assert np.allclose(s.out, acc / l, atol=1e-6)
        m = new
    weights = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
    assert np.allclose(h.weights, weights, atol=1e-6) and np.allclose(h.attention_out, weights @ v, atol=1e-6)
    assert [s.tile for s in h.steps] == [1, 2, 3, 4] and h.steps[-1].last == 8


def test_the_default_example_rescales_in_later_tiles():
    steps = FL.hand_example(8, 2, 3).steps
    assert (
        sum(s.rescale < 1 for s in steps[1:]) >= 2
    )  # the max grows twice after the first tile: exp(m_old - m_new) < 1


def test_a_loop_without_the_rescale_is_not_softmax_v(small):
    """Null of hand_equal: each tile normalised at its own max and summed without exp(m_old - m_new)."""
    h = small.hand
    scores, v = torch.tensor(h.scores), torch.tensor(h.v)
    acc, l = torch.zeros(2, dtype=torch.float64), 0.0
    for s in h.steps:
        part = scores[s.first - 1 : s.last]
        e = torch.exp(part - part.max())  # the tile's own max, never reconciled
        acc, l = acc + e @ v[s.first - 1 : s.last], l + float(e.sum())
    wrong = (acc / l).tolist()
    diff = max(abs(a - b) for a, b in zip(wrong, h.attention_out))
    assert (
        status(claims_with(small, hand=replace(h, flash_out=wrong, max_abs_diff=diff)), "hand_equal") == "contradicted"
    )


def test_an_approximation_that_drops_small_weights_is_not_equal(small):
    """Null of equal_large: attention that keeps only weights above 1/n (a sparse approximation) is not the same."""
    points = []
    for pt in small.memory:
        q, k, v = torch.randn(3, pt.n, 64, generator=torch.Generator().manual_seed(0)).unbind(0)
        out, w = attention(q, k, v)
        kept = w * (w > 1.0 / pt.n)
        approx = kept / kept.sum(-1, keepdim=True) @ v
        points.append(replace(pt, max_abs_diff=float((approx - out).abs().max())))
    assert status(claims_with(small, memory=points), "equal_large") == "contradicted"


# ----------------------------------------------------------------------------------------------- memory
def test_peak_bytes_counts_live_tensors_and_forgets_freed_ones():
    x = torch.zeros(1000)
    with PeakBytes(x) as p:
        y = x + 1  # 4,000 bytes, kept
        for _ in range(3):
            (y * 2).sum()  # a 4,000-byte temporary freed each time, and a scalar
    assert p.peak == 4000 + 4000 + 4 and p.largest == 4000
    with PeakBytes(x) as p:
        x[:10].clone()  # a view of the input costs nothing, the clone 40 bytes
    assert p.peak == 40


def test_the_memory_table_against_closed_forms(small):
    for pt in small.memory:
        assert pt.plain_largest == pt.scores_bytes == 4 * pt.n * pt.n  # attention(): the (n, n) scores in float32
        assert pt.plain_bytes >= 2 * pt.scores_bytes  # scores and weights alive at once
        assert pt.tiled_largest <= max(4 * pt.n * 64, 4 * 64 * 64)  # the output or one tile
    out_bytes = [4 * pt.n * 64 for pt in small.memory]
    steps = np.diff([pt.tiled_bytes for pt in small.memory])
    assert list(steps) == list(np.diff(out_bytes))  # the tiled peak grows by exactly the output's bytes


def test_growth_order_reads_the_exponent_of_a_closed_form():
    ns = [100, 200, 400, 800]
    assert growth_order(ns, [7 + 3 * n for n in ns]) == pytest.approx(1)
    assert growth_order(ns, [7 + 3 * n * n for n in ns]) == pytest.approx(2)
    assert growth_order(ns, [5, 5, 5, 5]) != growth_order(ns, [5, 5, 5, 5])  # flat: no increments, no order (NaN)


def test_plain_n2_fails_on_a_peak_that_grows_linearly(small):
    """Null of plain_n2: the tiled loop's own peaks in its place."""
    assert status(claims_with(small, plain_growth=small.tiled_growth), "plain_n2") == "contradicted"


def test_tiled_n_fails_when_the_one_tile_is_the_whole_sequence(small):
    """Null of tiled_n: the same loop with tile = n holds the (n, n) block, and grows as n^2."""
    points = [memory_point(pt.n, 64, 0) for pt in small.memory]
    assert all(pt.tiled_largest == 4 * pt.n * pt.n for pt in points)
    growth = growth_order([pt.n for pt in points], [pt.tiled_bytes for pt in points])
    assert growth > 1.8
    assert status(claims_with(small, tiled_growth=growth), "tiled_n") == "contradicted"


# ---------------------------------------------------------------------------------------------- traffic
def test_traffic_formulas_and_their_order():
    io = FL.traffic(1024, 64, 192)
    assert io.standard == 4 * 1024 * 64 + 4 * 1024**2
    assert (io.m_elements, io.block_c, io.t_c) == (98304, 384, 3)
    assert io.flash == 3 * 1024 * 64 + 2 * 1024 + 3 * (3 * 1024 * 64 + 4 * 1024)
    # Theta(n^2 d^2 / M) at large n: twice n or twice d is four times the traffic, twice M half of it
    base = FL.traffic(2**16, 64, 192).flash
    assert FL.traffic(2**17, 64, 192).flash / base == pytest.approx(4, rel=0.02)
    assert FL.traffic(2**16, 128, 192).flash / base == pytest.approx(4, rel=0.02)
    assert FL.traffic(2**16, 64, 384).flash / base == pytest.approx(0.5, rel=0.02)
    assert FL.traffic(2**16, 64, 192).standard / FL.traffic(2**15, 64, 192).standard == pytest.approx(4, rel=0.01)


def test_io_fewer_is_not_shown_when_sram_is_small_against_d_squared(small):
    """Null: with d = 128 and 64 KiB (3 d^2 > M) at n = 256, FlashAttention reads about as much as the standard."""
    io = FL.traffic(256, 128, 64)
    assert io.ratio < 1
    assert status(claims_with(small, io=io), "io_fewer") == "not_shown"


# ------------------------------------------------------------------------------------------------- masks
@pytest.mark.parametrize("n, b, w", [(64, 8, 5), (70, 8, 13), (50, 16, 1), (40, 8, 100), (33, 4, 4)])
def test_tile_formula_equals_the_loop_and_a_brute_force_count(n, b, w):
    masks = {
        "dense": torch.ones(n, n, dtype=torch.bool),
        "causal": causal_mask(n),
        "sliding": sliding_window_mask(n, w),
        "block_sparse": block_sparse_mask(n, b),
    }
    for name, mask in masks.items():
        brute = sum(
            mask[i0 : i0 + b, j0 : j0 + b].numel()
            for i0 in range(0, n, b)
            for j0 in range(0, n, b)
            if mask[i0 : i0 + b, j0 : j0 + b].any()
        )
        assert FL.tile_closed_form(name, n, b, w) == brute == computed_scores(n, n, mask, b), name


def test_mask_tiles_fails_for_a_loop_that_skips_nothing(small):
    """Null of mask_tiles: a loop without the skipping rule computes n^2 for every mask."""
    n = small.params["n_max"]
    dense = computed_scores(n, n, None, small.params["block"])
    masks = [replace(m, computed=dense) for m in small.masks]
    assert status(claims_with(small, masks=masks), "mask_tiles") == "contradicted"


def test_reach_against_boolean_matrix_powers():
    n, w, b, layers = 40, 4, 8, 6
    for mask in (sliding_window_mask(n, w), block_sparse_mask(n, b)):
        a = mask.int()
        power = torch.eye(n, dtype=torch.int)
        for L, seen in enumerate(reached(mask, layers), start=1):
            power = ((power @ a + power) > 0).int()  # keys reachable in at most L steps
            assert torch.equal(seen, power[-1].bool()), L


def test_sliding_reach_fails_for_a_block_sparse_mask(small):
    """Null of sliding_reach: a mask that is no sliding window does not reach L (w - 1) back."""
    n, p = small.params["n_max"], small.params
    reach = FL.reach_table(
        block_sparse_mask(n, p["block"]), block_sparse_mask(n, p["block"]), p["window"], p["block"], p["layers"]
    )
    assert status(claims_with(small, reach=reach), "sliding_reach") == "contradicted"


def test_sparse_blind_fails_for_a_dense_causal_mask(small):
    """Null of sparse_blind: with every earlier key readable, nothing stays unseen."""
    n, p = small.params["n_max"], small.params
    reach = FL.reach_table(sliding_window_mask(n, p["window"]), causal_mask(n), p["window"], p["block"], p["layers"])
    assert all(r.sparse_unseen == 0 for r in reach)
    assert status(claims_with(small, reach=reach), "sparse_blind") == "contradicted"


def test_block_out_of_range_is_refused_naming_it():
    with pytest.raises(ParamError, match="block must be from n_max/32 to n_max/4") as err:
        FL.flash(n_max=4096, block=64)
    assert err.value.name == "block" and err.value.fields["lo"] == 128
    with pytest.raises(ParamError):
        FL.flash(n_max=512, block=256)

"""nn/flash.py and nn/masks.py against what we did not write: attention() is checked elsewhere against torch, and
here flash_attention equals it (and torch's fused SDPA) to 1e-6 in float32, its gradients equal autograd's
through attention(), it never makes an (n, n) tensor (a TorchDispatchMode sees every tensor; the same check
catches attention()), and the masks equal their closed forms and a windowed softmax computed by slicing."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from attnlab.nn import attention, block_sparse_mask, causal_mask, flash_attention, sliding_window_mask
from attnlab.nn.flash import computed_scores, flash_steps
from attnlab.nn.masks import block_layout

TOL = dict(atol=1e-6, rtol=0)


def qkv(*batch, t_q=37, t_k=None, d=8, d_v=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    t_k = t_q if t_k is None else t_k
    return (
        torch.randn(*batch, t_q, d, generator=g),
        torch.randn(*batch, t_k, d, generator=g),
        torch.randn(*batch, t_k, d_v or d, generator=g),
    )


def padding(b: int, t: int, lengths: list[int]) -> torch.Tensor:
    """(B, 1, 1, T): key j of sequence b is real when j < lengths[b]; a length 0 masks every key of that row."""
    return (torch.arange(t)[None, :] < torch.tensor(lengths)[:, None])[:, None, None, :]


MASKS = {
    "none": lambda t: None,
    "padding": lambda t: padding(2, t, [t, t - 5]),
    "sliding": lambda t: sliding_window_mask(t, 5),
    "block_sparse": lambda t: block_sparse_mask(t, 8),
    "random": lambda t: torch.rand(2, 3, t, t, generator=torch.Generator().manual_seed(1)) < 0.3,
}


@pytest.mark.parametrize("tile", [1, 7, 16, 64])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("kind", list(MASKS))
def test_equals_attention_and_sdpa(kind, causal, tile):
    q, k, v = qkv(2, 3, t_q=37)  # (B, H, T, d): T = 37 is no multiple of any tile but 1, and 64 >= T
    mask = MASKS[kind](37)
    ref = attention(q, k, v, mask, causal=causal)[0]
    out = flash_attention(q, k, v, mask, tile, causal=causal)
    torch.testing.assert_close(out, ref, **TOL)
    full = None if mask is None else mask.expand(2, 3, 37, 37)
    if causal:
        full = causal_mask(37) if full is None else full & causal_mask(37)
    if full is None or bool(full.any(-1).all()):  # SDPA answers NaN for a row with no key; attention() gives zeros
        torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=full), atol=2e-6, rtol=0)


def test_causal_with_a_cache_and_different_widths():
    q, k, v = qkv(2, t_q=5, t_k=23, d=4, d_v=6)  # 5 new queries after 18 cached positions; d_v != d_k
    for tile in (1, 3, 8, 32):
        torch.testing.assert_close(
            flash_attention(q, k, v, tile=tile, causal=True), attention(q, k, v, causal=True)[0], **TOL
        )
        torch.testing.assert_close(flash_attention(q, k, v, tile=tile), attention(q, k, v)[0], **TOL)


def test_broadcast_batch_dims_and_query_independent_mask():
    q, _, _ = qkv(2, 4, t_q=19)
    _, k, v = qkv(1, 4, t_q=19, seed=3)  # keys shared across the batch: broadcast
    mask = torch.rand(19, generator=torch.Generator().manual_seed(2)) < 0.7  # (T_k,): one row for every query
    out = flash_attention(q, k, v, mask, 4)
    assert out.shape == (2, 4, 19, 8)
    torch.testing.assert_close(out, attention(q, k, v, mask)[0], **TOL)


def test_a_fully_masked_row_outputs_zeros_not_nan():
    q, k, v = qkv(2, 1, t_q=10)
    mask = padding(2, 10, [10, 0])  # the second sequence has no real key at all
    out = flash_attention(q, k, v, mask, 3)
    assert torch.isfinite(out).all() and (out[1] == 0).all()
    rows = torch.ones(10, 10, dtype=torch.bool)
    rows[4] = False  # one query with nothing to read
    out = flash_attention(q[0, 0], k[0, 0], v[0, 0], rows, 4)
    assert (out[4] == 0).all() and torch.isfinite(out).all()
    torch.testing.assert_close(out, attention(q[0, 0], k[0, 0], v[0, 0], rows)[0], **TOL)


@pytest.mark.parametrize("causal, kind", [(False, "none"), (True, "none"), (False, "padding"), (True, "sliding")])
def test_gradients_equal_autograd_through_attention(causal, kind):
    mask = MASKS[kind](21)
    grads = []
    for fn in (
        lambda q, k, v: attention(q, k, v, mask, causal=causal)[0],
        lambda q, k, v: flash_attention(q, k, v, mask, 6, causal=causal),
    ):
        q, k, v = (x.requires_grad_() for x in qkv(2, 3, t_q=21, seed=5))
        w = torch.randn(2, 3, 21, 8, generator=torch.Generator().manual_seed(9))
        (fn(q, k, v) * w).sum().backward()
        grads.append((q.grad, k.grad, v.grad))
    for a, b in zip(*grads):
        assert torch.isfinite(b).all()
        torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-5)


class Largest(TorchDispatchMode):
    """The most elements of any new storage an op makes (views of the inputs make none)."""

    def __init__(self, *inputs):
        super().__init__()
        self.inputs = {x.untyped_storage().data_ptr() for x in inputs if x is not None}
        self.numel = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for x in tree_leaves(out):
            if isinstance(x, torch.Tensor) and x.untyped_storage().data_ptr() not in self.inputs:
                self.numel = max(self.numel, x.untyped_storage().nbytes() // x.element_size())
        return out


@pytest.mark.parametrize(
    "causal, mask",
    [(False, None), (True, None), (False, sliding_window_mask(512, 40)), (False, block_sparse_mask(512, 32))],
)
def test_never_makes_an_n_by_n_tensor_while_attention_does(causal, mask):
    n, d, tile = 512, 16, 32
    q, k, v = qkv(t_q=n, d=d)
    with torch.no_grad():
        with Largest(q, k, v, mask) as plain:
            attention(q, k, v, mask, causal=causal)
        with Largest(q, k, v, mask) as tiled:
            flash_attention(q, k, v, mask, tile, causal=causal)
    assert plain.numel >= n * n  # the check can fail: it catches the (n, n) scores of attention()
    assert tiled.numel <= max(n * d, tile * tile) < n * n  # the output, or one tile's block


def test_tiles_entirely_masked_are_skipped():
    n, b = 64, 8
    assert computed_scores(n, n, None, b) == n * n
    assert computed_scores(n, n, tile=b, causal=True) == sum(
        (i + 1) * b * b for i in range(n // b)
    )  # tiles on and below the diagonal
    assert computed_scores(n, n, torch.zeros(n, n, dtype=torch.bool), b) == 0
    layout = block_layout(n, b)
    assert computed_scores(n, n, block_sparse_mask(n, b), b) == int(layout.sum()) * b * b


def test_steps_carry_the_online_softmax():
    q, k, v = qkv(t_q=1, t_k=11, d=3)
    out, steps = flash_steps(q, k, v, tile=3)
    assert [s.cols for s in steps] == [(0, 3), (3, 6), (6, 9), (9, 11)]
    scores = (q @ k.T / math.sqrt(3))[0]  # (11,)
    for s in steps:
        seen = scores[: s.cols[1]]
        torch.testing.assert_close(s.m[0], seen.max())  # running max of every score so far
        torch.testing.assert_close(s.l[0], torch.exp(seen - seen.max()).sum())  # the running sum at that max
        torch.testing.assert_close(
            s.out[0], torch.softmax(seen, 0) @ v[: s.cols[1]], **TOL
        )  # softmax of the keys so far
    torch.testing.assert_close(steps[-1].out, out, **TOL)


def test_bad_inputs_are_named():
    q, k, v = qkv(t_q=4)
    with pytest.raises(ValueError, match="tile must be a positive integer"):
        flash_attention(q, k, v, tile=0)
    with pytest.raises(ValueError, match="same last dim d_k"):
        flash_attention(q, k[..., :3], v)
    with pytest.raises(ValueError, match="bool"):
        flash_attention(q, k, v, torch.ones(4, 4))
    with pytest.raises(ValueError, match="window must be at least 1"):
        sliding_window_mask(4, 0)


# ------------------------------------------------------------------------------------------------ the masks
@pytest.mark.parametrize("t, w", [(1, 1), (9, 1), (9, 3), (9, 9), (9, 20), (40, 7)])
def test_sliding_window_closed_form(t, w):
    m = sliding_window_mask(t, w)
    expected = [[max(0, i - w + 1) <= j <= i for j in range(t)] for i in range(t)]
    assert m.tolist() == expected
    assert int(m.sum()) == sum(min(i + 1, w) for i in range(t))


@pytest.mark.parametrize(
    "t, b, local, sinks", [(16, 4, 1, 1), (19, 4, 1, 1), (19, 4, 2, 0), (20, 5, 1, 2), (7, 8, 1, 1)]
)
def test_block_sparse_is_its_layout_blown_up_and_made_causal(t, b, local, sinks):
    layout = block_layout(t, b, local=local, sinks=sinks)  # (nb, nb): which block pairs are kept
    blown = torch.kron(layout.int(), torch.ones(b, b, dtype=torch.int))[:t, :t].bool()  # every entry of a kept block
    assert torch.equal(block_sparse_mask(t, b, local=local, sinks=sinks), blown & causal_mask(t))
    for i in range(t):  # in words: own block and the local-1 before it, the first `sinks` blocks, never the future
        for j in range(t):
            sees = j <= i and (i // b - local < j // b <= i // b or j // b < sinks)
            assert bool(block_sparse_mask(t, b, local=local, sinks=sinks)[i, j]) == sees


def test_sliding_window_attention_is_the_softmax_over_the_window_alone():
    q, k, v = qkv(t_q=30, d=4)
    w = 6
    out = flash_attention(q, k, v, sliding_window_mask(30, w), 4)
    for i in range(30):
        lo = max(0, i - w + 1)
        weights = torch.softmax(q[i] @ k[lo : i + 1].T / 2.0, dim=0)  # only the keys in the window, sqrt(4) = 2
        torch.testing.assert_close(out[i], weights @ v[lo : i + 1], **TOL)

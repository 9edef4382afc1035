"""models/window_mlp.py (issue 24, item 1's baseline): Bengio et al. 2003's fixed-window MLP language model.

Checked against what we did not write: sum(p.numel()) for the count, the model's own outputs under edits of its
input (what it can and cannot see, by construction), and, for training, the empirical conditional entropy of the
text given its last `window` characters, counted here: no model that reads only those characters can have a
lower training loss, and a trained one should come close to it.
"""

from __future__ import annotations

import collections
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.models import WindowMLP, WindowMLPConfig
from attnlab.models.window_mlp import n_params
from attnlab.text import JINGYESI, CharTokenizer
from attnlab.train import Probe, TokenData, TrainConfig, Trainer
from attnlab.train.token_cache import token_stream

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: see attnlab.io.threads

V, CONTEXT = 11, 16


def model_for(window: int, seed: int = 0, **kw) -> WindowMLP:
    torch.manual_seed(seed)
    return WindowMLP(
        WindowMLPConfig(vocab_size=V, context_length=CONTEXT, window=window, d_embed=4, d_hidden=8, **kw)
    ).eval()


def logits_of(model: WindowMLP, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([ids]))[0]  # (T, V)


sequences = st.lists(st.integers(0, V - 1), min_size=1, max_size=CONTEXT)


# --- the count --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "vocab, context, window, d_embed, d_hidden",
    [(1, 1, 1, 1, 1), (20, 64, 3, 16, 64), (7, 9, 9, 3, 5), (300, 32, 5, 24, 100)],
)
def test_count_is_the_number_of_parameters(vocab, context, window, d_embed, d_hidden):
    config = WindowMLPConfig(vocab, context, window, d_embed, d_hidden)
    assert n_params(config) == sum(p.numel() for p in WindowMLP(config).parameters())


# --- what it can see ------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(ids=sequences, window=st.integers(1, 6), data=st.data())
def test_no_future_leaks(ids, window, data):
    """Changing tokens after t never changes the logits at positions <= t."""
    t = data.draw(st.integers(0, len(ids) - 1))
    future = data.draw(st.lists(st.integers(0, V - 1), min_size=len(ids) - 1 - t, max_size=len(ids) - 1 - t))
    model = model_for(window)
    before, after = logits_of(model, ids), logits_of(model, ids[: t + 1] + future)
    assert torch.equal(before[: t + 1], after[: t + 1])


@settings(max_examples=30, deadline=None)
@given(ids=st.lists(st.integers(0, V - 1), min_size=2, max_size=CONTEXT), window=st.integers(1, 6), data=st.data())
def test_the_window_is_fixed(ids, window, data):
    """A token window or more places back never changes the logits at t; one inside the window does."""
    t = data.draw(st.integers(1, len(ids) - 1))
    s = data.draw(st.integers(0, t - 1))
    swapped = ids[:s] + [(ids[s] + data.draw(st.integers(1, V - 1))) % V] + ids[s + 1 :]  # another token at s
    model = model_for(window)
    before, after = logits_of(model, ids)[t], logits_of(model, swapped)[t]
    if t - s >= window:  # outside tokens t-w+1 .. t: invisible, however far back
        assert torch.equal(before, after)
    else:
        assert (before - after).abs().max() > 1e-6


def test_sees_its_window_and_no_further_on_one_example():
    model = model_for(window=3)
    ids = [1, 2, 3, 4, 5, 6]
    base = logits_of(model, ids)[5]  # reads 4, 5, 6
    assert torch.equal(base, logits_of(model, [9, 9, 9, 4, 5, 6])[5])
    assert not torch.allclose(base, logits_of(model, [1, 2, 3, 9, 5, 6])[5])


# --- the padding row ------------------------------------------------------------------------------------


@settings(max_examples=20, deadline=None)
@given(ids=st.lists(st.integers(1, V - 1), min_size=1, max_size=CONTEXT), window=st.integers(2, 6))
def test_padding_is_its_own_row_not_token_0(ids, window):
    """Before the start the model reads the padding row: at t < window-1 the logits change with that row and
    not with token 0's row (the sequence holds no token 0); from t = window-1 on, the padding row is not read."""
    model = model_for(window)
    base = logits_of(model, ids)
    with torch.no_grad():
        model.E.weight[0] += 1.0  # token 0's embedding
    assert torch.equal(base, logits_of(model, ids))
    with torch.no_grad():
        model.E.weight[model.pad_id] += 1.0  # the padding row
    moved = (base - logits_of(model, ids)).abs().amax(-1)  # (T,)
    early = min(window - 1, len(ids))
    assert (moved[:early] > 1e-6).all()
    assert (moved[early:] == 0).all()


def test_a_sequence_shorter_than_the_window():
    model = model_for(window=6)
    short = logits_of(model, [3, 1, 4])
    assert short.shape == (3, V)
    assert torch.equal(short, logits_of(model, [3, 1, 4, 1, 5, 9, 2, 6])[:3])  # the same positions, same logits
    # padding is not token 0: a sequence starting with 0s does not read like one starting at the beginning
    assert not torch.allclose(logits_of(model, [0, 0, 3])[2], short[0])


def test_ids_out_of_range_or_too_long_are_refused():
    model = model_for(window=2)
    with pytest.raises(ValueError, match="token ids must be in"):
        model(torch.tensor([[0, V]]))  # V is the padding id: never a token
    with pytest.raises(ValueError, match="sequence too long"):
        model(torch.zeros(1, CONTEXT + 1, dtype=torch.long))


# --- training in the lab's loop -------------------------------------------------------------------------


def conditional_entropy(stream: list[int], window: int) -> float:
    """Mean -log p̂(y_t | last `window` tokens) with p̂ the text's own counts: the lowest mean cross-entropy any
    function of those tokens can reach on this stream (padding before the start, as the model reads)."""
    x, y = stream[:-1], stream[1:]
    padded = [None] * (window - 1) + x
    contexts = [tuple(padded[t : t + window]) for t in range(len(x))]
    pairs, seen = collections.Counter(zip(contexts, y)), collections.Counter(contexts)
    return -sum(n * math.log(n / seen[c]) for (c, _), n in pairs.items()) / len(y)


@pytest.mark.parametrize("window, p_guang", [(2, 0.5), (3, 1.0)])
def test_trains_in_the_lab_loop_down_to_what_its_window_allows(window, p_guang):
    """静夜思 as one window, trained by the lab's Trainer. A window of 2 cannot tell 床前明月→光 from 望明月→，
    (both read 明月): its loss stops at the text's conditional entropy given 2 characters (> 0) and p(光 | 床前明月)
    at 1/2. A window of 3 reads 前明月 and reaches both 0 and 1."""
    tok = CharTokenizer.train([JINGYESI])
    stream = token_stream([JINGYESI], tok)  # (25,) ids: the poem and its end mark
    data = TokenData(stream, stream.clone())  # validation on the same stream: estimate_val_loss runs too
    probe = Probe(tok.encode("床前明月"), tok.encode("光")[0], "床前明月", "光")
    torch.manual_seed(0)
    model = WindowMLP(
        WindowMLPConfig(vocab_size=tok.vocab_size, context_length=32, window=window, d_embed=8, d_hidden=32)
    )
    trainer = Trainer(model, data, TrainConfig(steps=200, lr=1e-2, weight_decay=0.0, seed=0), probe=probe)
    uniform = math.log(tok.vocab_size)
    assert trainer.estimate_val_loss() == pytest.approx(uniform, abs=0.05)  # untrained: near uniform
    result = trainer.run()
    floor = conditional_entropy(stream.tolist(), window)
    assert (floor > 0.05) == (window == 2)
    assert floor - 1e-6 <= result.val_loss <= floor + 0.02  # never below what the window allows; close to it
    assert result.val_loss < 0.05 * uniform
    assert result.p_probe == pytest.approx(p_guang, abs=0.03)


# --- the config -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(vocab_size=0), "vocab_size must be a positive integer, got 0"),
        (dict(context_length=-1), "context_length must be a positive integer"),
        (dict(window=2.0), "window must be a positive integer, got 2.0"),
        (dict(d_embed=True), "d_embed must be a positive integer"),
        (dict(d_hidden=None), "d_hidden must be a positive integer"),
        (dict(window=9, context_length=8), "window must be at most context_length: got window=9, context_length=8"),
        (dict(dropout=1.0), r"dropout must be in \[0, 1\), got 1.0"),
        (dict(dropout=-0.1), r"dropout must be in \[0, 1\)"),
    ],
)
def test_bad_configs_are_refused(change, message):
    with pytest.raises(ValueError, match=message):
        WindowMLPConfig(**change)


def test_config_round_trips_and_refuses_unknown_fields():
    config = WindowMLPConfig(vocab_size=5, context_length=8, window=4, d_embed=2, d_hidden=3, dropout=0.1)
    assert WindowMLPConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match=r"unknown WindowMLPConfig fields \['n_heads'\]"):
        WindowMLPConfig.from_dict({**config.to_dict(), "n_heads": 2})

"""The long-range topic (issue 40, part 1): the task's sequences as defined, the lesson's LSTM and GRU equal to
attnlab.nn's gate-by-gate LSTM and GRU with the weights copied across (so the kernel it trains with computes the
page's equations), the distances visited, the claims at the defaults and on their null (answers drawn at random),
and the --json contract (distances, accuracy per model)."""

from __future__ import annotations

import json

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from results import explained, quick_flags, result
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.lessons.common.claims import SHOWN
from attnlab.lessons.explain import TOPICS
from attnlab.lessons.long_range import runs
from attnlab.lessons.long_range.lesson import distances
from attnlab.nn.recurrent import GRU, LSTM

QUICK = TOPICS["long-range"].quick


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 200), st.integers(0, 2**31 - 1))
def test_a_sequence_is_marker_value_distractors_query_and_its_answer_is_the_value(d, seed):
    x, answers = runs.sequences(torch.Generator().manual_seed(seed), 4, d)
    assert x.shape == (4, d + 3)
    for row, a in zip(x.tolist(), answers.tolist()):
        text = "".join(runs.CHARS[i] for i in row)
        assert text[0] == "*" and text[-1] == "?" and text[1] in runs.VALUES
        assert all(c in runs.NOISE for c in text[2:-1])
        assert runs.CHARS[a] == text[1]  # the answer is the value d distractors back


def test_the_null_draws_answers_apart_from_the_sequence():
    x, answers = runs.sequences(torch.Generator().manual_seed(0), 2000, 8, shuffle=True)
    assert set(answers.tolist()) == set(range(len(runs.VALUES)))
    same = (answers == x[:, 1]).float().mean().item()
    assert abs(same - 1 / len(runs.VALUES)) < 0.03  # agrees with the value only by chance (se 0.007)


def ours_from_torch(rnn: torch.nn.Module, kind: str):
    """attnlab.nn's LSTM or GRU holding torch's weights (torch stacks LSTM gates i, f, g, o and GRU gates r, z, n;
    it adds two biases where ours has one, except inside the GRU's r ⊙ (W_nh h + b_nh))."""
    H = rnn.hidden_size
    W_ih, W_hh, b_ih, b_hh = rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0, rnn.bias_hh_l0
    ours = (LSTM if kind == "lstm" else GRU)(rnn.input_size, H)
    with torch.no_grad():
        for k, gate in enumerate("ifco" if kind == "lstm" else "rz"):
            rows = slice(k * H, (k + 1) * H)
            getattr(ours, f"W_{gate}").copy_(torch.cat([W_hh[rows], W_ih[rows]], dim=1))  # [h, x]
            getattr(ours, f"b_{gate}").copy_(b_ih[rows] + b_hh[rows])
        if kind == "gru":
            n = slice(2 * H, 3 * H)
            ours.W_nx.copy_(W_ih[n])
            ours.b_n.copy_(b_ih[n])
            ours.W_nh.copy_(W_hh[n])
            ours.b_nh.copy_(b_hh[n])
    return ours


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_the_lessons_recurrent_nets_compute_attnlab_nns_equations(kind):
    model = runs.build(kind, 8, seed=3).eval()
    ours = ours_from_torch(model.rnn, kind)
    x, _ = runs.sequences(torch.Generator().manual_seed(1), 5, 20)
    with torch.no_grad():
        h_T, _ = ours(model.embed(x))  # one gate-by-gate step a token
        torch.testing.assert_close(model.head(h_T), model(x), atol=1e-5, rtol=1e-4)


def test_the_distances_start_at_8_and_grow_fourfold_to_the_longest():
    assert distances(32) == [8, 32] and distances(128) == [8, 32, 128] and distances(256) == [8, 32, 128, 256]


def test_the_three_models_are_of_one_size():
    sizes = [runs.n_params(m) for m in runs.MODELS]
    assert max(sizes) / min(sizes) < 1.1


@pytest.mark.slow  # trains
def test_quick_settings_keep_the_contract():
    r = result("long-range", "en", **QUICK)
    assert r.distances == distances(QUICK["longest"]) and set(r.accuracy) == set(runs.MODELS)
    for m in runs.MODELS:
        assert len(r.per_seed[m]) == len(r.distances) and all(len(v) == 1 for v in r.per_seed[m])
        assert all(0 <= a <= 1 for a in r.accuracy[m])
    assert r.example.endswith("→ " + r.example[1])


@pytest.mark.slow  # trains
def test_at_the_defaults_the_transformer_recalls_far_back_and_the_recurrent_nets_do_not():
    r = explained("long-range", "en")
    assert {c.id: c.status for c in r.claims} == {"holds": SHOWN, "leads": SHOWN, "fades": SHOWN}
    for c in r.claims:  # answers drawn at random: nothing to carry, no claim holds
        assert c.null["status"] != SHOWN, (c.id, c.null)
    assert TOPICS["long-range"].answer(r).option == "b"


@pytest.mark.slow  # trains
def test_the_json_carries_distances_and_accuracy_per_model():
    out = CliRunner().invoke(app, ["explain", "long-range", *quick_flags("long-range"), "--json", "--lang", "en"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)  # progress goes to stderr
    assert data["distances"] == distances(QUICK["longest"])
    assert set(data["accuracy"]) == {"transformer", "lstm", "gru"}

"""The cost group's claims fail on their nulls (serial-vs-parallel, complexity, rnn-gradients, context-vectors):
each claim is run where its effect is absent by construction, through a real parameter where one exists and
otherwise by replacing the part of the lesson that makes the effect, and must then not be shown.

No test here reads a clock: the two timed lessons have no timing claim (their times are shown as measurements),
and where they run, their timer is replaced by a constant so the counted claims are checked alone."""

from __future__ import annotations

import pytest
import torch

import attnlab.nn
import attnlab.nn.recurrent
from attnlab.lessons.complexity import lesson as CX
from attnlab.lessons.context_vectors import lesson as CV
from attnlab.lessons.rnn_gradients import lesson as RG
from attnlab.lessons.serial_vs_parallel import lesson as SP

RealRNN, RealLSTM = attnlab.nn.recurrent.RNN, attnlab.nn.recurrent.LSTM
RealBlock, RealMHA = attnlab.nn.Block, attnlab.nn.MultiHeadAttention

SMALL_SP = dict(n_max=64, d_model=8, n_heads=2, repeats=1)
SMALL_CX = dict(n=64, d_model=32, n_heads=4, time_n_max=64, time_d_model=16, repeats=1)


def statuses(result) -> dict[str, str]:
    return {c.id: c.status for c in result.claims}


@pytest.fixture
def no_clock(monkeypatch):
    """The serial lesson's timer, replaced: its claims are counts, and a test never reads wall-clock time."""
    monkeypatch.setattr(SP, "best_time", lambda fn, repeats: 0.0)


# --------------------------------------------------------------------------------------- serial-vs-parallel
def test_serial_at_the_defaults_every_claim_is_shown(no_clock):
    r = SP.serial_vs_parallel(lang="en")
    assert set(statuses(r).values()) == {"shown"} and r.points[-1].n == 1024


def test_an_rnn_that_runs_all_positions_at_once_does_not_grow(monkeypatch, no_clock):
    class AllAtOnce(RealRNN):  # the same cell with no recurrence: one batched pass, as many ops at any n
        def forward(self, x, h0=None):
            h = torch.tanh(x @ self.W_x.T + self.b)  # (B, n, d)
            return h[:, -1], [h[:, 0], *h.unbind(1)]

    monkeypatch.setattr(attnlab.nn.recurrent, "RNN", AllAtOnce)
    c = next(c for c in SP.serial_vs_parallel(**SMALL_SP).claims if c.id == "rnn_steps")
    assert c.status == "not_shown" and c.values["ops_n1"] == c.values["ops_n0"]


def test_attention_that_visits_each_position_in_turn_has_a_count_that_grows(monkeypatch, no_clock):
    class PerPosition(RealMHA):
        def forward(self, x, *args, **kw):
            for i in range(x.shape[1]):  # one operation per position, one after another
                x[:, i].sum()
            return super().forward(x, *args, **kw)

    monkeypatch.setattr(attnlab.nn, "MultiHeadAttention", PerPosition)
    assert statuses(SP.serial_vs_parallel(**SMALL_SP))["attention_ops"] == "contradicted"


def test_attention_that_reads_only_its_neighbours_has_no_one_step_path(monkeypatch, no_clock):
    class Local(RealMHA):
        def forward(self, x, *args, **kw):
            out, weights = super().forward(x, *args, **kw)
            n = x.shape[1]
            near = (torch.arange(n)[:, None] - torch.arange(n)[None, :]).abs() <= 1  # (n, n)
            return out, None if weights is None else weights * near

    monkeypatch.setattr(attnlab.nn, "MultiHeadAttention", Local)
    c = next(c for c in SP.serial_vs_parallel(**SMALL_SP).claims if c.id == "path")
    assert c.status == "contradicted" and c.values["attention_path"] != 1


# ----------------------------------------------------------------------------------------------- complexity
def test_complexity_at_the_defaults_every_claim_is_shown():
    assert set(statuses(CX.complexity(lang="en")).values()) == {"shown"}


def test_a_block_whose_ffn_is_twice_the_formulas_breaks_the_ledger(monkeypatch):
    # counted, timed and parameter-counted on a block with d_ff doubled: the formula's FLOPs, crossover and
    # parameter count no longer describe it
    monkeypatch.setattr(attnlab.nn, "Block", lambda d, h, d_ff: RealBlock(d, h, 2 * d_ff))
    s = statuses(CX.complexity(**SMALL_CX))
    assert s["flops_match"] == s["crossover"] == s["ffn_share"] == "contradicted"
    assert s["memory"] == s["rnn_row"] == s["rnn_crossover"] == "shown"  # nothing there depends on d_ff


def test_weights_with_twice_the_heads_miss_the_memory_formula(monkeypatch):
    real = CX.time_curve
    monkeypatch.setattr(CX, "time_curve", lambda n_max, d, h, d_ff, repeats: real(n_max, d, 2 * h, d_ff, repeats))
    assert statuses(CX.complexity(**SMALL_CX))["memory"] == "contradicted"


def test_an_rnn_step_that_reads_a_doubled_input_is_not_4_d_squared(monkeypatch):
    class Doubled(RealRNN):  # d_in = 2 d: the input is read twice, so a step costs 6 d^2 FLOPs
        def __init__(self, d_in, d_hidden):
            super().__init__(2 * d_in, d_hidden)

        def forward(self, x, h0=None):
            return super().forward(torch.cat([x, x], dim=-1), h0)

    monkeypatch.setattr(attnlab.nn.recurrent, "RNN", Doubled)
    r = CX.complexity(**SMALL_CX)
    assert r.rnn.rnn_step_counted == 6 * 32 * 32
    s = statuses(r)
    assert s["rnn_row"] == s["rnn_crossover"] == "contradicted"


# -------------------------------------------------------------------------------------------- rnn-gradients
def test_rnn_gradients_at_the_defaults_every_claim_is_shown():
    assert set(statuses(RG.rnn_gradients(lang="en")).values()) == {"shown"}


def test_a_w_h_larger_than_lambda_breaks_the_bound(monkeypatch):
    real = RG.scaled_matrix
    monkeypatch.setattr(RG, "scaled_matrix", lambda n, lam, g: real(n, 1.2 * lam, g))  # singular values 1.2 lambda
    c = next(c for c in RG.rnn_gradients(input_scale=0.0).claims if c.id == "rnn_bound")
    assert c.status == "contradicted" and c.values["distances_over"] == 40


def test_a_gaussian_w_h_does_not_reach_lambda_to_the_t(monkeypatch):
    def gaussian(n, lam, g):  # largest singular value lam, the others smaller: W^k falls below lam^k
        W = torch.randn(n, n, generator=g, dtype=torch.float64)
        return lam * W / torch.linalg.matrix_norm(W, ord=2)

    monkeypatch.setattr(RG, "scaled_matrix", gaussian)
    s = statuses(RG.rnn_gradients())
    assert s["linear_exact"] == "contradicted" and s["rnn_bound"] == "shown"


def test_a_norm_preserving_step_does_not_vanish(monkeypatch):
    real = RG.scaled_matrix
    monkeypatch.setattr(RG, "scaled_matrix", lambda n, lam, g: real(n, 1.0, g))  # orthogonal whatever lambda says
    c = next(c for c in RG.rnn_gradients(input_scale=0.0).claims if c.id == "vanishes")  # tanh' = 1: no saturation
    assert c.status == "not_shown" and c.measured == pytest.approx(1.0, rel=1e-9)


def test_at_lambda_1_and_above_the_vanishing_claim_reads_the_courses_lambda_0_9():
    for lam in (1.0, 2.0):
        c = next(c for c in RG.rnn_gradients(lam=lam).claims if c.id == "vanishes")
        assert c.values["lam"] == 0.9 and c.status == "shown"


def test_forget_gates_near_0_keep_nothing_and_the_page_says_so():
    c = next(c for c in RG.rnn_gradients(forget_bias=-4.0, lang="en").claims if c.id == "lstm_keeps")
    assert c.status == "contradicted" and c.values["mean_forget"] < 0.1 and "contradicted" in c.versus


def test_gates_left_free_are_not_the_product_of_forget_gates(monkeypatch):
    real = RealLSTM.forward
    monkeypatch.setattr(RealLSTM, "forward", lambda self, x, state=None, *, detach_gates=False: real(self, x, state))
    assert statuses(RG.rnn_gradients())["lstm_direct"] == "contradicted"


def test_with_no_input_no_unit_saturates_and_nothing_is_pulled_down():
    s = statuses(RG.rnn_gradients(lam=1.5, input_scale=0.0))
    assert s["saturation"] == "not_shown"


# ----------------------------------------------------------------------------------------- context-vectors
def test_context_vectors_at_the_defaults_every_claim_is_shown():
    assert set(statuses(CV.context_vectors(lang="en")).values()) == {"shown"}


def test_a_gpt_without_its_causal_mask_lets_what_follows_in(monkeypatch):
    from attnlab.models import GPT

    real = CV.hidden_states
    monkeypatch.setattr(
        CV,
        "hidden_states",
        lambda model, idx, **kw: real(model, idx, **({"causal": False} if isinstance(model, GPT) else kw)),
    )
    assert statuses(CV.context_vectors())["causal_same"] == "contradicted"


def test_an_encoder_under_the_causal_mask_does_not_differ(monkeypatch):
    from attnlab.models import Encoder

    real = CV.hidden_states

    def causal_encoder(model, idx, **kw):
        if not isinstance(model, Encoder):
            return real(model, idx, **kw)
        x = model.embed(idx)
        states = [x[0]]
        for block in model.blocks:  # the encoder's own blocks, masked as the GPT's are
            x = block(x, causal=True)
            states.append(x[0])
        return states

    monkeypatch.setattr(CV, "hidden_states", causal_encoder)
    c = next(c for c in CV.context_vectors().claims if c.id == "encoder_differs")
    assert c.status == "not_shown" and c.measured == 0.0


def test_an_embedding_that_mixes_in_the_sentence_is_not_context_free(monkeypatch):
    real = CV.hidden_states

    def bag_of_words(model, idx, **kw):
        states = real(model, idx, **kw)
        return [states[0] + states[0].mean(0), *states[1:]]  # the whole sentence's mean added to every position

    monkeypatch.setattr(CV, "hidden_states", bag_of_words)
    assert statuses(CV.context_vectors())["embedding_same"] == "contradicted"

"""The recorded dependency graph (serial_vs_parallel/graph.py) against computations whose dependencies we know by
construction: a loop where each output reads the one before is a chain of n, outputs computed from the input alone
are a chain of 1, and an RNN made to compute every position at once changes the lesson's measured steps and path."""

from __future__ import annotations

import pytest
import torch

import attnlab.nn
import attnlab.nn.recurrent
from attnlab.lessons.serial_vs_parallel import lesson as SP
from attnlab.lessons.serial_vs_parallel.graph import OpTrace, dependencies, shortest_path

SMALL = dict(n_max=64, d_model=8, n_heads=2, repeats=1)


@pytest.fixture
def no_clock(monkeypatch):
    monkeypatch.setattr(SP, "best_time", lambda fn, repeats: 0.0)  # the claims are counts; no test reads a clock


def test_a_loop_over_its_own_outputs_is_a_chain_and_independent_outputs_are_one_step():
    x = torch.randn(6, 3)
    with OpTrace() as chained:
        outs, y = [], torch.zeros(3)
        for i in range(6):
            y = torch.tanh(y + x[i])  # reads the output before it
            outs.append(y)
    longest, edges = dependencies(chained, outs)
    assert longest == 6 and edges == {i: [i + 1] for i in range(5)}
    assert shortest_path(edges, 0, 5) == 5
    with OpTrace() as apart:
        outs = [torch.tanh(x[i] * 2) for i in range(6)]  # each from the input alone, in any order
    longest, edges = dependencies(apart, outs)
    assert longest == 1 and edges == {} and shortest_path(edges, 0, 5) == -1
    with OpTrace() as skipping:
        a = torch.tanh(x[0])
        b = torch.tanh(x[1])
        c = torch.tanh(a + b + x[2])  # reads both earlier outputs directly
    longest, edges = dependencies(skipping, [a, b, c])
    assert longest == 2 and edges == {0: [2], 1: [2]}


def test_the_lesson_reads_n_and_1_dependent_steps_from_the_layers_it_ran(no_clock):
    r = SP.serial_vs_parallel(**SMALL)
    assert [(p.rnn_steps, p.attention_steps, p.rnn_path) for p in r.points] == [(n, 1, n - 1) for n in (16, 32, 64)]


def test_an_rnn_that_runs_every_position_at_once_has_one_step_and_no_path(monkeypatch, no_clock):
    class AllAtOnce(attnlab.nn.recurrent.RNN):  # the same cell with no recurrence: one batched pass
        def forward(self, x, h0=None):
            h = torch.tanh(x @ self.W_x.T + self.b)  # (B, n, d)
            return h[:, -1], [h[:, 0], *h.unbind(1)]

    monkeypatch.setattr(attnlab.nn.recurrent, "RNN", AllAtOnce)
    r = SP.serial_vs_parallel(**SMALL)
    assert r.points[-1].rnn_steps == 1 and r.points[-1].rnn_path == -1
    (path,) = [c for c in r.claims if c.id == "path"]
    assert path.status == "contradicted"

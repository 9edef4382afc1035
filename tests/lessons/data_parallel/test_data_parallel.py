"""Data parallel, shown to be exact (lessons/data_parallel): two processes under torchrun (gloo) against one.

The lesson's run is real: torchrun starts two ranks that train under DDP, and once more without the all-reduce
(the control). Checked here against things we did not write: torch's autograd and plain torch training loops
(the one-process reference), torch's own parameter count (the bytes), F.scaled_dot_product_attention (the tensor
parallel split), and a GPipe schedule counted slot by slot (the bubble). Every claim meets its null: the run
without the all-reduce, a model with a frozen table, a small model, one rank, two halves that are the same.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import threading
import time

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from results import result as shared

from attnlab.lessons.common import disk_cache
from attnlab.lessons.common.claims import CONTRADICTED, NOT_SHOWN, SHOWN
from attnlab.lessons.data_parallel import experiment, launch, splits
from attnlab.lessons.data_parallel.lesson import (
    CONTROL_FACTOR,
    ROUNDING,
    TOL,
    bytes_claim,
    card_claims,
    data_parallel,
    needs_allreduce,
    same_gradient,
    same_update,
    weights_tolerance,
)
from attnlab.lessons.data_parallel.splits import CARD_BYTES
from attnlab.models.count import count_params
from attnlab.models.published import published
from attnlab.nn.multihead import MultiHeadAttention
from attnlab.train import progress
from attnlab.train.data import get_batch

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.slow,
]  # trains or starts processes; tiny models: see attnlab.io.threads

SMALL = dict(b=2, train_steps=2)  # the registry tests (API, CLI, page) use these too: one run for all


@pytest.fixture(scope="module")
def result():
    return data_parallel(**SMALL, ranks=8, lang="en")


def claim(r, id):
    return next(c for c in r.claims if c.id == id)


# --- the run: two ranks against one process --------------------------------------------------------------------


def test_two_ranks_take_the_step_one_process_takes_on_both_halves(result):
    run = result.run
    assert run.world == 2 and run.b == 2 and run.steps == 2 and run.optimizer == "sgd"
    assert run.grad_diff <= TOL and run.weight_diff <= TOL  # fp32 rounding of sums taken in another order
    assert run.ranks_diff == 0.0  # one averaged gradient, one step: bit for bit
    assert run.grad_max > 1e-2  # the gradient is not negligible: the tolerance is small beside it
    for id in ("gradient", "update", "ranks_equal", "needs_allreduce", "bytes"):
        assert claim(result, id).status == SHOWN, claim(result, id)
    # each rank's loss is the mean over its b windows: their mean is the loss over 2b (equal halves)
    mean = [sum(x) / 2 for x in zip(*run.losses_ranks)]
    assert mean == pytest.approx(run.losses_one, abs=1e-6) and run.loss_diff <= 1e-6
    assert run.losses_ranks[0] != run.losses_ranks[1]  # the ranks saw different windows
    assert [p.name for p in run.params] == [n for n, _ in experiment.build(0).named_parameters()]
    assert max(p.ddp for p in run.params) == run.weight_diff


def test_the_one_process_reference_is_plain_torch_training():
    """The lesson's one-process run against a loop written here: SGD, cross-entropy, the same 2b windows."""
    model = experiment.build(0)
    opt = torch.optim.SGD(model.parameters(), lr=experiment.LR["sgd"])
    windows, data, mine = torch.Generator().manual_seed(0), experiment.stream(), []
    for _ in range(3):
        x, y = get_batch(data, experiment.CONTEXT, 4, windows)  # (4, T)
        loss = F.cross_entropy(model(x).reshape(-1, experiment.vocab_size()), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        mine.append(loss.item())
    lab = experiment.build(0)
    losses, _ = experiment.train(lab, lab, 4, 3, 0, "sgd")
    assert losses == pytest.approx(mine, abs=1e-6)
    assert experiment.max_abs_diff(experiment.weights(lab), experiment.weights(model))[0] <= 1e-6


def test_the_mean_of_two_half_gradients_is_the_gradient_of_the_whole_batch():
    """What DDP's all-reduce relies on, by autograd: ½(∇L_0 + ∇L_1) = ∇L over 2b; either half alone is not."""
    model = experiment.build(3)
    x, y = get_batch(experiment.stream(), experiment.CONTEXT, 8, torch.Generator().manual_seed(3))  # (8, T)

    def grad(xs, ys):
        model.zero_grad()
        F.cross_entropy(model(xs).flatten(0, 1), ys.flatten()).backward()
        return torch.cat([p.grad.flatten() for p in model.parameters()])

    whole, first, second = grad(x, y), grad(x[:4], y[:4]), grad(x[4:], y[4:])
    assert (first / 2 + second / 2 - whole).abs().max() <= TOL
    assert (first - whole).abs().max() > 100 * TOL


def test_without_the_allreduce_the_same_claims_are_not_shown(result):
    """The null of the run's claims is the control the ranks ran beside it: no all-reduce."""
    run = result.run
    assert run.alone_diff > 10 * TOL and run.grad_diff_alone > 10 * TOL and run.alone_ranks_diff > 0
    one = "one process"
    assert same_gradient(run.grad_diff_alone, run.grad_max, "en", control=one).status == CONTRADICTED
    assert (
        same_update(run.alone_diff, run.alone_where, run.steps, run.optimizer, "en", control=one).status == CONTRADICTED
    )
    assert min(p.alone for p in run.params) >= 0 and max(p.alone for p in run.params) == run.alone_diff


def test_the_rounding_reference_is_one_process_summing_the_two_halves():
    """experiment.train_halves against a loop written here: the two halves' mean losses, halved, accumulated by
    autograd into one gradient, one SGD step; that gradient is the whole batch's to rounding (the mean of means)."""
    b, steps, seed = 3, 2, 5
    model = experiment.build(seed)
    opt = torch.optim.SGD(model.parameters(), lr=experiment.LR["sgd"])
    windows, data = torch.Generator().manual_seed(seed), experiment.stream()
    for _ in range(steps):
        x, y = get_batch(data, experiment.CONTEXT, 2 * b, windows)  # (2b, T)
        opt.zero_grad()
        for half in (slice(0, b), slice(b, 2 * b)):
            (F.cross_entropy(model(x[half]).flatten(0, 1), y[half].flatten()) / 2).backward()
        opt.step()
    lab = experiment.build(seed)
    experiment.train_halves(lab, b, steps, seed, "sgd")
    assert experiment.max_abs_diff(experiment.weights(lab), experiment.weights(model))[0] == 0.0


def test_adamw_magnifies_rounding_and_the_weights_tolerance_follows_it():
    """AdamW divides each step by √v: the same sums in another order (one process, the two halves) end further
    apart than fp32's 1e-6, and the two processes no further than that; SGD's rounding stays under 1e-6. The
    control (no all-reduce) still misses by more than ten times the tolerance, and fails the update claim."""
    adamw = shared("data-parallel", lang="en", **SMALL, ranks=8, optimizer="adamw")
    run = adamw.run
    assert run.optimizer == "adamw" and run.rounding_diff > TOL  # magnified: one process, no second one involved
    tol = weights_tolerance(run.rounding_diff)
    assert tol == ROUNDING * run.rounding_diff and run.weight_diff <= tol
    assert claim(adamw, "update").status == SHOWN and claim(adamw, "update").margin == tol
    control = claim(adamw, "needs_allreduce")
    assert control.status == SHOWN and control.baseline == tol and run.alone_diff > CONTROL_FACTOR * tol
    one = "one process"
    alone = same_update(run.alone_diff, run.alone_where, run.steps, "adamw", "en", control=one, tol=tol)
    assert alone.status == CONTRADICTED


def test_sgd_keeps_the_fp32_tolerance(result):
    run = result.run
    assert run.rounding_diff <= TOL / ROUNDING and weights_tolerance(run.rounding_diff) == TOL
    assert claim(result, "update").margin == TOL == claim(result, "needs_allreduce").baseline


def test_the_control_claim_is_not_shown_when_both_halves_are_the_same(monkeypatch):
    """A text that fits in one window is the same window on every rank: each rank alone then takes the one
    process's step, so the control's lead vanishes."""
    monkeypatch.setattr(experiment, "TEXT", "床前明月光")  # 5 characters < the context: one window everywhere
    one, alone = experiment.build(1), experiment.build(1)
    experiment.train(one, one, 4, 2, 1)  # one process, "2b"
    experiment.train(alone, alone, 2, 2, 1, rank=1, world=2)  # rank 1 on its own "half"
    diff, where = experiment.max_abs_diff(experiment.weights(alone), experiment.weights(one))
    assert diff <= TOL
    assert needs_allreduce(diff, where, "en").status != SHOWN


# --- the bytes ---------------------------------------------------------------------------------------------------


def test_ddp_reduces_one_fp32_gradient_per_parameter(result):
    run = result.run
    n = sum(p.numel() for p in experiment.build(0).parameters())  # torch's own count
    assert run.n_params == n == count_params(experiment.config()) == result.n_params
    assert run.bytes_per_step == [4 * n] * run.steps and sum(run.buckets) == 4 * n
    assert result.grad_bytes == 4 * n and result.ring_bytes == 4 * n  # 2·(2−1)/2 · N · 4
    # the null: with the token table frozen, DDP reduces only the gradients that exist
    table = experiment.build(0).embed.tok.weight.numel()
    assert run.frozen_trainable == n - table and run.frozen_bytes == 4 * (n - table)
    assert bytes_claim([run.frozen_bytes], n, "en").status == CONTRADICTED


def test_the_ring_allreduce_formula():
    n = 1000.0
    assert splits.ring_allreduce_bytes(n, 1) == 0  # one rank sends nothing
    assert splits.ring_allreduce_bytes(n, 2) == n
    assert splits.ring_allreduce_bytes(n, 8) == pytest.approx(2 * 7 / 8 * n)
    assert splits.ring_allreduce_bytes(n, 4096) == pytest.approx(2 * n, rel=1e-3)


# --- what does not fit on one card ---------------------------------------------------------------------------------


def test_zero_stages_divide_the_training_state():
    for precision in ("mixed", "fp32"):
        assert splits.per_param_bytes("ddp", 64, precision) == 16  # 2+2+12 or 4+4+8
        assert all(splits.per_param_bytes(s, 1, precision) == 16 for s in splits.STAGES)  # one rank: no split
        assert splits.per_param_bytes("zero3", 64, precision) == 16 / 64
        per = [splits.per_param_bytes(s, 8, precision) for s in splits.STAGES]
        assert per == sorted(per, reverse=True)
    assert splits.per_param_bytes("zero1", 64, "mixed") == 2 + 2 + 12 / 64
    assert splits.per_param_bytes("zero2", 64, "mixed") == 2 + 14 / 64
    big = published("Llama-2-70B")
    s = splits.split(big.name, big.architecture, 64, 1, 8)
    ddp = next(x for x in s.stages if x.stage == "ddp")
    assert ddp.mixed_gb == pytest.approx(16 * count_params(big.architecture) / 1e9)
    assert ddp.mixed_gb == pytest.approx(1120, rel=0.02) and not ddp.mixed_fits  # "70B · 16 B = 1.12 TB"


def test_the_card_claim_and_its_null():
    big, small = published("Llama-2-70B"), published("GPT-2 small")
    s = splits.split(big.name, big.architecture, 64, 1, 8)
    assert [c.status for c in card_claims(s, "en")] == [SHOWN]  # 1.1 TB of training state against one 80 GB card
    # null: a state just over one card (5% over, inside the 10% margin) is no verdict; a model that fits claims nothing
    near = dataclasses.replace(s, n_params=int(1.05 * CARD_BYTES / 16))
    assert [c.status for c in card_claims(near, "en")] == [NOT_SHOWN]
    assert card_claims(splits.split(small.name, small.architecture, 64, 1, 8), "en") == []


def test_tensor_parallel_degree_divides_the_heads_and_the_ffn():
    for name, k in (("Llama-2-70B", 64), ("Llama-2-70B", 4), ("GPT-2 small", 8), ("GPT-3 175B", 5)):
        a = published(name).architecture
        s = splits.split(name, a, k, 1, 8)
        kv, d_ff = a.kv_heads or a.heads, a.d_ff or 4 * a.d_model
        fits = [t for t in range(1, k + 1) if a.heads % t == 0 and kv % t == 0 and d_ff % t == 0]
        assert s.tp == max(fits) and s.tp_heads_per_rank * s.tp == a.heads and s.tp_ff_per_rank * s.tp == d_ff
    assert splits.split("Llama-2-70B", published("Llama-2-70B").architecture, 64, 1, 8).tp == 8  # 8 KV heads


def test_megatron_split_sums_to_the_whole_layer():
    """Columns of W_Q, W_K, W_V (heads) and W_1, rows of W_O and W_2: each rank's partial output, summed (the
    all-reduce), is the layer's output; checked against the lab's attention and torch's SDPA."""
    torch.manual_seed(0)
    B, T, d, H, t = 2, 5, 16, 4, 2
    x = torch.randn(B, T, d)
    mha = MultiHeadAttention(d, H, bias=False)
    whole, _ = mha(x, causal=True)  # (B, T, d)
    dk, per = d // H, d // t
    partial = []
    for i in range(t):
        cols = slice(i * per, (i + 1) * per)  # this rank's H/t heads

        def heads(W):
            return (x @ W.weight[cols].T).view(B, T, H // t, dk).transpose(1, 2)  # (B, H/t, T, d_k)

        o = F.scaled_dot_product_attention(heads(mha.W_Q), heads(mha.W_K), heads(mha.W_V), is_causal=True)
        partial.append(o.transpose(1, 2).reshape(B, T, per) @ mha.W_O.weight[:, cols].T)  # rows of W_O
    torch.testing.assert_close(sum(partial), whole, atol=1e-5, rtol=0)
    W1, W2 = torch.randn(d, 4 * d), torch.randn(4 * d, d)
    f = 4 * d // t
    ffn = sum(F.gelu(x @ W1[:, i * f : (i + 1) * f]) @ W2[i * f : (i + 1) * f] for i in range(t))
    torch.testing.assert_close(ffn, F.gelu(x @ W1) @ W2, atol=1e-4, rtol=1e-5)


@given(st.integers(1, 16), st.integers(1, 64))
def test_the_bubble_is_the_idle_share_of_a_gpipe_schedule(p, m):
    """Stage s runs micro-batch j in slot s + j: count the idle (stage, slot) cells of the whole schedule."""
    slots = m + p - 1
    busy = {(s, s + j) for s in range(p) for j in range(m)}
    idle = sum((s, slot) not in busy for s in range(p) for slot in range(slots))
    assert splits.bubble(p, m) == pytest.approx(idle / (p * slots))


# --- launching, failing, stopping, keeping ------------------------------------------------------------------------


def test_a_run_that_cannot_start_says_so(monkeypatch, tmp_path):
    monkeypatch.setattr(
        launch, "command", lambda *a: [sys.executable, "-c", "print('no gloo here'); raise SystemExit(3)"]
    )
    with pytest.raises(launch.NoRanks) as err:
        launch.run_both(1, 1, 0, "sgd")
    assert "status 3" in str(err.value) and "no gloo here" in str(err.value)
    assert isinstance(err.value, ValueError)  # the CLI prints it as one line; the page beside its form
    assert "no gloo here" in err.value.localized("zh")


def test_a_run_nobody_waits_for_stops_both_ranks(monkeypatch):
    started = []

    def slow(*a):
        return [sys.executable, "-c", "import time; time.sleep(300)"]

    real_start = launch.start_ranks

    def start(*a, **kw):
        started.append(real_start(*a, **kw))
        return started[-1]

    monkeypatch.setattr(launch, "command", slow)
    monkeypatch.setattr(launch, "start_ranks", start)
    p = progress.Progress()
    threading.Timer(1.0, p.cancel).start()
    with progress.reporting(p), pytest.raises(progress.Cancelled):
        launch.run_both(1, 1, 0, "sgd")
    assert started and started[0].poll() is not None  # torchrun's whole session was killed
    assert {m["name"] for m in p.snapshot()} == {"ranks", "one"}


def test_the_run_is_kept_so_other_k_and_models_never_start_it_again(result, monkeypatch):
    monkeypatch.setattr(launch, "run_both", lambda *a: pytest.fail("the run was started again"))
    again = data_parallel(**SMALL, ranks=512, published="GPT-3 175B", micro=64, lang="zh")
    assert again.run is result.run and again.split.k == 512 and again.split.model == "GPT-3 175B"
    text = disk_cache.dumps(result)  # the web keeps it on disk: it reads back the same
    assert disk_cache.decode(json.loads(text)) == result


def test_the_ranks_module_is_what_torchrun_runs():
    cmd = launch.command(launch.Path("/tmp/x"), 2, 3, 4, "adamw")
    assert cmd[:3] == [sys.executable, "-m", "torch.distributed.run"] and "--standalone" in cmd
    assert cmd[cmd.index("-m", 3) + 1] == "attnlab.lessons.data_parallel.ranks" and cmd[-5:] == [
        "/tmp/x",
        "2",
        "3",
        "4",
        "adamw",
    ]
    assert str(launch.PACKAGE_ROOT) in launch._env()["PYTHONPATH"].split(os.pathsep)  # the ranks import this attnlab
    assert math.isfinite(launch.LIMIT_S) and launch.LIMIT_S >= 600  # no short fixed timeout


def test_a_first_visit_shows_the_two_processes_steps_then_the_results(result, monkeypatch):
    """The page never blocks on the two processes: it answers 202 with their steps (train/progress.py), and the
    result once they are done. The run is held at a gate here, so nothing depends on the machine's speed."""
    from fastapi.testclient import TestClient

    from attnlab.web.app import create_app
    from attnlab.web.pages import explain as explain_pages

    gate = threading.Event()

    def held(b, steps, seed, kind):
        progress.report("ranks", 0, steps)
        progress.report("one", 0, steps)
        progress.report("one", steps, steps)
        assert gate.wait(120)
        return result.run

    monkeypatch.setattr(launch, "run_both", held)
    monkeypatch.setattr(explain_pages, "PROGRESS_AFTER_S", 0.0)
    from attnlab.web import lesson_cache

    monkeypatch.setattr(lesson_cache, "CACHE_MIN_S", 0.0)  # kept however quick: held runs can end within 0.2 s
    params = {**{k: str(v) for k, v in SMALL.items()}, "b": "5", "lang": "en"}  # a run no other test asks for
    url = "/api/explain/data-parallel/progress"
    with TestClient(create_app()) as client:
        try:
            page = client.get("/explain/data-parallel", params=params, headers={"accept": "text/html"})
            assert page.status_code == 202 and '<noscript><meta http-equiv="refresh"' in page.text
            assert "two processes (torchrun + DDP)" in page.text and 'id="claims-h"' not in page.text
            state = client.get(url, params=params).json()
            assert state["status"] == "training" and [m["name"] for m in state["models"]] == ["ranks", "one"]
        finally:
            gate.set()
        while state["status"] == "training":
            time.sleep(0.05)
            state = client.get(url, params=params).json()
        assert state == {"status": "done", "models": []}
        page = client.get("/explain/data-parallel", params=params, headers={"accept": "text/html"})
        assert page.status_code == 200 and 'id="claims-h"' in page.text

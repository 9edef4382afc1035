"""Step ⑤ and step ③ of the pipeline, checked: the text's update rule raises p(光) for every seed, the real
first AdamW step is the training's own first step, −log p is the closed form, and 月's attention is measured.
Every claim's status is what its own numbers give (status_of on the printed measured, baseline and margin)."""

from __future__ import annotations

import math

import pytest
import torch

from attnlab.lessons.common.claims import status_of
from attnlab.lessons.pipeline.first_step import RISE, first_step, neg_log
from attnlab.lessons.pipeline.focus import focus, focus_over_seeds
from attnlab.lessons.pipeline.lesson import attention_step
from attnlab.text import POEM
from attnlab.train import new_run

pytestmark = pytest.mark.slow  # trains the lesson's models


def test_neg_log_is_the_closed_form_and_refuses_non_probabilities():
    assert neg_log(0.12).neg_log == pytest.approx(2.1202635362, abs=1e-9)  # the text's −log 0.12 ≈ 2.1
    assert neg_log(1).neg_log == 0.0
    assert neg_log(math.exp(-3)).neg_log == pytest.approx(3.0)
    for bad in (0, -0.1, 1.0001, float("nan"), float("inf"), True, "0.5"):
        with pytest.raises(ValueError, match="p must be a probability"):
            neg_log(bad)


@pytest.mark.parametrize("seed", range(10))
def test_the_texts_plain_step_raises_p_for_every_seed(seed):
    run = new_run("poem", seed=seed, device="cpu")
    r = first_step(run, seeds=0, lang="en")
    assert r.plain.p_after > r.plain.p_before
    assert r.plain.lr == run.config.lr_at(0) / 2**r.plain.halvings
    # first order: −log p falls by about lr·‖g‖² (the lr here is small enough for that to be close)
    drop = r.plain.loss_before - r.plain.loss_after
    assert 0 < drop and drop == pytest.approx(r.plain.predicted_drop, rel=0.5)
    status = {c.id: c.status for c in r.claims}
    assert status["plain_raises"] == status["adamw_line"] == status["adamw_sign"] == "shown"
    # the text says one update raises p(光): AdamW's first step does in some seeds and not in others (0, 6, 7)
    assert status["adamw_first"] == ("contradicted" if seed in (0, 6, 7) else "shown")
    assert_consistent(r.claims)


def test_the_adamw_step_is_the_real_trainings_first_step_and_the_run_is_untouched():
    run = new_run("poem", seed=0, device="cpu")
    state = {k: v.clone() for k, v in run.model.state_dict().items()}
    rng = torch.get_rng_state()
    r = first_step(run, seeds=0)
    assert run.trainer.step == 0 and all(torch.equal(state[k], v) for k, v in run.model.state_dict().items())
    assert torch.equal(torch.get_rng_state(), rng)  # the run's dropout stream is as it was
    run.trainer.run(should_stop=lambda: True)  # the run's own first step, by the training loop itself
    first = run.trainer.history[0]
    assert r.adamw.p_after == pytest.approx(first["p_probe"], rel=1e-5)
    assert r.adamw.line_loss_before == pytest.approx(first["loss"], rel=1e-5)
    assert r.adamw.lr == run.config.lr_at(0) == pytest.approx(run.config.lr) and r.adamw.positions == len(POEM)
    # the numbers on the default seed: the first AdamW step lowers p(光), the text's rule raises it
    assert r.adamw.p_before == pytest.approx(0.186, abs=5e-4) and r.adamw.p_after == pytest.approx(0.164, abs=5e-4)
    assert r.plain.p_after > r.plain.p_before > r.adamw.p_after
    # Adam's first step: every number with |g| >= 1e-6 moved by 0.99·lr to lr, none by more
    assert r.adamw.near_lr == r.adamw.large > 0 and r.adamw.max_ratio <= 1 + 1e-6


def test_seed_counts_agree_with_one_run_per_seed():
    run = new_run("poem", seed=5, device="cpu")
    r = first_step(run, seeds=4, lang="en")
    lowered = raised = 0
    for seed in range(4):
        one = first_step(new_run("poem", seed=seed, device="cpu"), seeds=0)
        lowered += one.adamw.p_after < one.adamw.p_before
        raised += one.adamw.p_after - one.adamw.p_before >= RISE * one.adamw.p_before
        assert {c.id: c.status for c in one.claims}["plain_raises"] == "shown"
    assert r.over_seeds.lowered == lowered and r.over_seeds.raised == raised and r.over_seeds.raised_plain == 4
    text = {c.id: c.text for c in r.claims}["adamw_over_seeds"]
    assert f"in {raised} of 4" in text and f"lowers it in {lowered}" in text
    # 4 of 4 is what chance (a random direction, 1/2) reaches with probability 1/16 > 5%: not shown with 4 seeds
    assert {c.id: c.status for c in r.claims}["plain_over_seeds"] == "not_shown"


@pytest.mark.parametrize(
    "settings", [dict(lr=1.0), dict(lr=1e-12), dict(d_model=2, heads=1, layers=1), dict(corpus="jingyesi", lr=1.0)]
)
def test_claims_hold_at_the_edges_of_the_form(settings):
    settings = dict(settings)
    corpus = settings.pop("corpus", "poem")
    r = first_step(new_run(corpus, seed=0, device="cpu", **settings), seeds=0, lang="zh")
    status = {c.id: c.status for c in r.claims}
    assert status["plain_raises"] == status["adamw_sign"] == "shown", [c.text for c in r.claims]
    assert r.plain.p_after > r.plain.p_before
    if settings.get("lr") == 1e-12:  # AdamW moves p(光) and the line's loss by about 1e-12: a tie, not a verdict
        assert status["adamw_first"] == status["adamw_line"] == "not_shown"
    assert_consistent(r.claims)


def assert_consistent(claims):
    """Each claim's status is what its printed numbers give."""
    for c in claims:
        assert c.status == status_of(c.direction, c.measured, c.baseline, c.margin), c.id
        assert c.holds == (c.status == "shown") and c.control and c.margin is not None


def test_focus_reads_the_attention_rows_of_every_head():
    run = new_run("poem", seed=0, device="cpu")
    run.trainer.run()
    f = focus(run.model, run.tokenizer, POEM, lang="en")
    att = attention_step(run.model, run.tokenizer, POEM)
    assert f.tokens == list("床前明月") and f.query_index == 3 and f.expected_index == 2
    assert len(f.heads) == len(att.maps) == 4
    for h, m in zip(f.heads, att.maps):
        assert h.weights == m.weights[3][:4] and sum(h.weights) == pytest.approx(1.0)
        assert h.top_weight == max(h.weights) and h.top_token == f.tokens[h.top]
    assert f.expected_top == sum(h.top == 2 for h in f.heads)
    # on the default seed no head of the trained model gives 明 月's largest weight (the issue's ≤ 0.252)
    assert f.expected_top == 0 and max(h.weights[2] for h in f.heads) <= 0.253
    status = {c.id: c.status for c in f.claims}
    # layer 2's heads look at 床 by a clear lead; layer 1's are within 5 points of their next largest
    assert status == {
        "top_1_1": "not_shown",
        "top_1_2": "not_shown",
        "top_2_1": "shown",
        "top_2_2": "shown",
        "expected_heads": "not_shown",
    }
    assert_consistent(f.claims)


def test_focus_over_seeds_counts_each_trained_model():
    s = focus_over_seeds("poem", {"steps": 20}, POEM, seeds=2)
    hits = []
    for seed in range(2):
        run = new_run("poem", steps=20, seed=seed, device="cpu")
        run.trainer.run()
        hits.append(focus(run.model, run.tokenizer, POEM).expected_top)
    assert s.heads == 4 and s.heads_with_expected == sum(hits) and s.seeds_with_expected == sum(h > 0 for h in hits)


def test_focus_refuses_a_text_without_the_query():
    run = new_run("poem", seed=0, device="cpu")
    with pytest.raises(ValueError, match="not a token"):
        focus(run.model, run.tokenizer, "床前", query="月")


def test_counting_over_seeds_is_only_for_small_models():
    run = new_run("poem", d_model=128, layers=2, seed=0, device="cpu")  # 400k parameters
    assert first_step(run).over_seeds is None  # the default counts only up to COUNT_LIMIT parameters
    with pytest.raises(ValueError, match="too large to count"):
        first_step(run, seeds=2)
    with pytest.raises(ValueError, match="parameter-steps"):
        focus_over_seeds("poem", {"d_model": 128, "layers": 2, "steps": 5000}, POEM, seeds=1)

"""The induction topic: its scores against hand-built attention maps and torch's own softmax, its sequences, the JSON
contract of issue 26, and its claims against their nulls (untrained models; identical curves; a head that looks a
fixed distance back; both models trained on each sequence's tokens shuffled)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from results import result

from attnlab.lessons.common import copying
from attnlab.lessons.common.claims import SHOWN
from attnlab.lessons.common.params import ParamError
from attnlab.lessons.explain import as_dict
from attnlab.lessons.induction import runs, scores
from attnlab.lessons.induction.lesson import THRESHOLD, claims_of

pytestmark = pytest.mark.slow  # trains the lesson's models

TINY = dict(steps=20, n=6, vocab=8, d_model=16, seed=1)  # seconds: the contract's shape, not the phase change


def causal_uniform(B: int, H: int, T: int) -> torch.Tensor:
    """torch's softmax over equal scores under a causal mask: every visible key weighted 1/(i+1)."""
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    scores_ = torch.zeros(B, H, T, T).masked_fill(~mask, float("-inf"))
    return F.softmax(scores_, dim=-1)  # (B, H, T, T)


def offset_map(T: int, offset: int, start: int = 0) -> torch.Tensor:
    """(T, T): query i >= start attends only to key i - offset (the queries before `start` to key 0)."""
    w = torch.zeros(T, T)
    for i in range(T):
        w[i, i - offset if i >= start and i - offset >= 0 else 0] = 1.0
    return w


@pytest.mark.parametrize("n", [3, 4, 16])
def test_prefix_matching_is_one_on_the_induction_map_and_chance_on_uniform(n):
    T = 2 * n
    induction = offset_map(T, n - 1, start=n)  # i -> i - n + 1 in the second half
    previous = offset_map(T, 1, start=1)  # i -> i - 1
    w = torch.stack([induction, previous])[None]  # (1, 2, T, T)
    pm = scores.prefix_matching(w, n)
    assert pm[0].item() == 1.0
    assert pm[1].item() == 0.0  # i - 1 is never i - n + 1 for n > 2
    prev = scores.previous_token(w)
    assert prev[1].item() == 1.0
    uniform = causal_uniform(3, 2, T)
    assert torch.allclose(scores.prefix_matching(uniform, n), torch.full((2,), scores.chance_prefix(n)), atol=1e-6)
    assert torch.allclose(scores.previous_token(uniform), torch.full((2,), scores.chance_previous(T)), atol=1e-6)
    # the closed form, summed by hand for n = 3: queries 3, 4, 5 see 4, 5, 6 keys
    if n == 3:
        assert scores.chance_prefix(3) == pytest.approx((1 / 4 + 1 / 5 + 1 / 6) / 3)


def test_icl_score_is_second_half_minus_first_leaving_out_the_repeats_first_token():
    n = 4
    losses = torch.tensor([[1.0, 2.0, 3.0, 99.0, 0.5, 0.5, 0.5]])  # (1, 2n - 1); 99 predicts token n, left out
    assert scores.icl_score(losses, n) == pytest.approx(0.5 - 2.0)


def test_eval_sequences_are_a_half_then_the_same_half_of_distinct_tokens_and_training_ones_repeat():
    x = runs.eval_sequences(seed=3, n=5, vocab=9)
    assert x.shape == (runs.N_EVAL, 10)
    assert torch.equal(x[:, :5], x[:, 5:])
    assert all(len(set(row[:5].tolist())) == 5 for row in x)
    g = torch.Generator().manual_seed(0)
    train = runs.repeats(g, 16, 6, 9, 13)  # (16, 13)
    for row in train.tolist():
        m = next(p for p in range(copying.MIN_PERIOD, 7) if all(row[i] == row[i % p] for i in range(13)))
        assert len(set(row[:m])) == m  # one period of distinct tokens, repeated
    assert runs.eval_sequences(3, 5, 9).equal(x)  # the same for a seed


def induction_map(row: list[int]) -> torch.Tensor:
    """(T, T) a content induction head built by hand: query i attends to the token after the previous occurrence
    of row[i] (key 0 where there is none)."""
    T = len(row)
    w = torch.zeros(T, T)
    for i in range(T):
        before = [j for j in range(i) if row[j] == row[i]]
        w[i, before[-1] + 1 if before else 0] = 1.0
    return w


def test_the_unrepeated_control_keeps_a_fixed_distance_head_and_loses_an_induction_head():
    n = 6
    x = runs.eval_sequences(seed=2, n=n, vocab=8)  # (N_EVAL, 2n) [r r]
    u = runs.unrepeated(x, seed=2)  # [r π(r)]
    assert torch.equal(u[:, :n], x[:, :n])
    assert all(sorted(a[n:].tolist()) == sorted(a[:n].tolist()) for a in u)  # the same tokens, another order
    fixed = offset_map(2 * n, n - 1, start=n)[None, None]  # (1, 1, T, T): i -> i - n + 1 whatever the tokens
    assert scores.prefix_matching(fixed, n).item() == 1.0  # on either sequence: it never reads them
    on_repeat = torch.stack([induction_map(a.tolist()) for a in x])[:, None]  # (B, 1, T, T)
    on_unrepeated = torch.stack([induction_map(a.tolist()) for a in u])[:, None]
    assert scores.prefix_matching(on_repeat, n).item() == 1.0
    # on [r π(r)] it looks at i - n + 1 only where π left the token in its place (u[i] == u[i - n]): about 1/n
    fixed_points = float((u[:, n:] == u[:, :n]).double().mean())
    assert scores.prefix_matching(on_unrepeated, n).item() == pytest.approx(fixed_points, abs=1e-6)
    assert fixed_points < 0.4


def test_the_null_shuffles_each_training_sequence_keeping_its_tokens():
    g = torch.Generator().manual_seed(0)
    x = runs.repeats(g, 8, 6, 9, 13)  # (8, 13)
    y = runs.shuffled(x, torch.Generator().manual_seed(1))
    assert not torch.equal(x, y)
    assert all(sorted(a.tolist()) == sorted(b.tolist()) for a, b in zip(x, y))


def test_first_crossing_is_strict_and_none_without_one():
    pm = [[[0.1, 0.2]], [[0.4, 0.3]], [[0.41, 0.0]]]
    assert runs.first_crossing([0, 5, 10], pm, 0.4) == 10
    assert runs.first_crossing([0, 5, 10], pm, 0.5) is None
    assert (
        runs.log_steps(0) == [0]
        and runs.log_steps(1000)[-1] == 1000
        and len(runs.log_steps(1000)) <= runs.LOG_POINTS + 1
    )


def test_bad_settings_are_refused_by_name():
    with pytest.raises(ParamError) as err:
        result("induction", n=12, vocab=8)
    assert err.value.name == "vocab"
    with pytest.raises(ParamError) as err:
        result("induction", d_model=20 + 1)
    assert err.value.name == "d_model"


def test_the_json_contract_of_issue_26():
    r = result("induction", lang="en", **TINY)
    d = json.loads(json.dumps(as_dict(r)))
    steps = d["steps"]
    assert steps[0] == 0 and steps[-1] == TINY["steps"] and all(isinstance(s, int) for s in steps)
    pm = d["prefix_matching"]
    assert len(pm) == len(steps) and all(len(layers) == 2 and all(len(h) == 2 for h in layers) for layers in pm)
    assert all(0.0 <= s <= 1.0 for layers in pm for h in layers for s in h)
    assert len(d["icl_score"]) == len(steps) and all(isinstance(x, float) for x in d["icl_score"])
    assert set(d["phase_step"]) == {"two_layer", "one_layer"}
    for v in d["phase_step"].values():
        assert v is None or v in steps
    one = d["one_layer"]
    assert len(one["prefix_matching"]) == len(steps) and all(len(layers) == 1 for layers in one["prefix_matching"])
    assert len(d["pm_rows"]) == len(steps) and len(d["pm_rows"][0]) == len(d["pm_cols"]) == 6
    k = d["text"]["k"]
    assert len(d["text"]["chars"]) == 2 * k and len(d["text"]["induction_map"]["weights"]) == 2 * k
    # the page's numbers are the curves' numbers
    assert d["pm_rows"][-1][:4] == [s for layer in pm[-1] for s in layer]
    assert d["icl_rows"][-1][:2] == [d["icl_score"][-1], one["icl_score"][-1]]
    # the phase step is what the curves say
    crossed = [s for s, layers in zip(steps, pm) if max(max(h) for h in layers) > THRESHOLD]
    assert d["phase_step"]["two_layer"] == (crossed[0] if crossed else None)


def test_untrained_models_show_no_claim():
    """The null: 0 steps, both models as drawn. No induction head, no lead over the control, no ICL, no
    previous-token head may be claimed."""
    r = result("induction", steps=0, seed=2)
    assert r.steps == [0] and r.phase_step == {"two_layer": None, "one_layer": None}
    assert [c.id for c in r.claims] == ["induction_forms", "needs_two_layers", "icl_drops", "previous_token"]
    assert all(c.status != SHOWN for c in r.claims), [(c.id, c.status) for c in r.claims]
    # untrained heads sit near uniform attention
    assert max(s for layers in r.prefix_matching for h in layers for s in h) < r.chance_prefix + 0.05


def fake(two_pm, one_pm, two_icl, one_icl, prev, chance=0.04, chance_prev=0.13, two_un=None, one_un=None):
    """Curves at one step; each head's score on [r π(r)] at chance unless given (a content head)."""
    at_chance = lambda pm: [[chance] * len(heads) for heads in pm]  # noqa: E731
    return SimpleNamespace(
        prefix_matching=[two_pm],
        previous_token=[prev],
        icl_score=[two_icl],
        steps=[100],
        chance_prefix=chance,
        chance_previous=chance_prev,
        unrepeated=two_un or at_chance(two_pm),
        one_layer=SimpleNamespace(
            prefix_matching=[one_pm], icl_score=[one_icl], unrepeated=one_un or at_chance(one_pm)
        ),
    )


def test_claims_are_comparisons_that_can_fail_and_tie_on_identical_curves():
    formed = fake([[0.05, 0.1], [0.9, 0.3]], [[0.05, 0.06]], -3.5, -0.3, [[0.6, 0.1], [0.0, 0.0]])
    assert [c.status for c in claims_of(formed, "en")] == [SHOWN] * 4
    # the null of each comparison: the control's curves are the model's own
    same = fake([[0.9, 0.3]], [[0.9, 0.3]], -3.5, -3.5, [[0.13, 0.13]])
    status = {c.id: c.status for c in claims_of(same, "en")}
    assert status["needs_two_layers"] == status["icl_drops"] == status["previous_token"] == "not_shown"
    # just under the threshold is not an induction head
    under = fake([[0.05, 0.1], [THRESHOLD - 1e-6, 0.3]], [[0.05, 0.06]], -3.5, -0.3, [[0.6, 0.1], [0.0, 0.0]])
    assert claims_of(under, "en")[0].status == "not_shown"
    # a 1-layer control that beat the 2-layer model would contradict the claim, not tie with it
    reversed_ = fake([[0.05, 0.1], [0.1, 0.1]], [[0.9, 0.06]], -0.3, -3.5, [[0.6, 0.1], [0.0, 0.0]])
    status = {c.id: c.status for c in claims_of(reversed_, "en")}
    assert status["needs_two_layers"] == status["icl_drops"] == "contradicted"
    # a head that looks a fixed distance back (n = 4: 3 back is where the repeat's next token sits) scores 0.75 on
    # [r r] and as much on [r π(r)]: not an induction head, in either model (the audit's case)
    positional = fake(
        [[0.05, 0.1], [0.75, 0.3]],
        [[0.75, 0.06]],
        -0.3,
        -0.3,
        [[0.6, 0.1], [0.0, 0.0]],
        two_un=[[0.05, 0.1], [0.75, 0.3]],
        one_un=[[0.75, 0.06]],
    )
    status = {c.id: c.status for c in claims_of(positional, "en")}
    assert status["induction_forms"] == status["needs_two_layers"] == "not_shown"


def test_the_phase_change_happens_in_two_layers_and_not_in_one():
    """A small setting where the crossing is cheap (about 15 s here; the defaults cross at steps 475-525 of 1000):
    the 2-layer model's best head passes 0.4 and the 1-layer control's never does, measured the same way."""
    r = result("induction", steps=400, n=8, vocab=16, d_model=32, seed=1)
    assert r.phase_step["two_layer"] is not None and r.phase_step["one_layer"] is None
    assert max(r.prefix_matching[-1][1]) > THRESHOLD  # the induction head is in layer 2
    status = {c.id: c.status for c in r.claims}
    assert status["induction_forms"] == status["needs_two_layers"] == status["icl_drops"] == SHOWN
    # the 2-layer model's ICL advantage over the control comes with the phase change: small 50 steps before it
    # (both learn which tokens have appeared), large at the end
    i = r.steps.index(r.phase_step["two_layer"] - 50)
    assert abs(r.icl_score[i] - r.one_layer.icl_score[i]) < 0.5
    assert r.one_layer.icl_score[-1] - r.icl_score[-1] > 1.0
    # the null at the same settings: each training sequence's tokens shuffled, nothing to copy: no claim shown
    null = result("induction", steps=400, n=8, vocab=16, d_model=32, seed=1, shuffle=True)
    assert [c.id for c in null.claims if c.status != "not_shown"] == [], [(c.id, c.versus) for c in null.claims]

"""The `moe` topic: four models trained alike, their sizes counted against the built models, routing read back, and
each claim against its null (identical runs, a uniform router, equal losses show nothing; a wrong twin contradicts)."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest
from results import result as stored

from attnlab.lessons.explain import as_dict
from attnlab.lessons.moe import lesson as moe_lesson
from attnlab.lessons.moe import runs
from attnlab.models.count import count_params
from attnlab.train import progress

pytestmark = pytest.mark.slow  # trains the lesson's models

SMALL = dict(train_steps=10, seed=3)


@pytest.fixture(scope="module")
def result():
    return stored("moe", lang="en", **SMALL)


def by_name(r) -> dict:
    return {run.name: run for run in r.runs}


def test_four_models_same_steps_sizes_from_the_built_models(result):
    r = result
    assert [run.name for run in r.runs] == list(runs.MODELS) and not r.held_out
    configs = runs.configs(runs.corpus_data("jingyesi"), 4, 1, 1.25, 0.01, moe_lesson.D_FF)
    for run in r.runs:
        assert run.total_params == count_params(configs[run.name])
    b = by_name(r)
    assert b["moe"].total_params == b["moe_free"].total_params
    assert b["dense_active"].d_ff == moe_lesson.D_FF and b["dense_total"].d_ff == 4 * moe_lesson.D_FF
    status = {c.id: c.status for c in r.claims}
    assert status["equal_active"] == status["equal_total"] == "shown"
    json.dumps(as_dict(r))  # plain data


def test_routing_read_back_adds_up(result):
    for run in result.runs:
        if run.routing is None:
            assert run.dead is None and run.name.startswith("dense")
            continue
        tokens = result.n_eval_tokens
        for counts, shares, chars in zip(run.routing.tokens_per_expert, run.routing.share, run.routing.chars):
            assert sum(counts) == tokens  # top_k = 1: one choice a token
            assert sum(shares) == pytest.approx(1.0)
            for n, top in zip(counts, chars):
                assert sum(c["count"] for c in top) <= n and all(0 < c["share"] <= 1 for c in top)
    rows = [e for e in result.experts if e.model == "moe"]
    assert len(rows) == runs.BASE["n_layers"] * 4 and [e.expert for e in rows[:4]] == [1, 2, 3, 4]


def test_without_balancing_weight_the_two_moes_are_one_model_and_the_balance_claims_are_not_shown():
    r = stored("moe", lang="en", balance=0.0, **SMALL)
    b = by_name(r)
    assert b["moe"].routing == b["moe_free"].routing and b["moe"].loss == b["moe_free"].loss
    status = {c.id: c.status for c in r.claims}
    assert status["balance_evens"] == status["dead_without"] == "not_shown"


def fake(run, **changes):
    out = copy.deepcopy(run)
    return dataclasses.replace(out, **changes)


def test_identical_runs_show_no_loss_claim(result):
    b = by_name(result)
    same = {
        "moe": b["moe"],
        "moe_free": fake(b["moe"], name="moe_free", balance=0.0),
        "dense_active": fake(b["dense_active"], loss=b["moe"].loss),
        "dense_total": fake(b["dense_total"], loss=b["moe"].loss),
    }
    status = {c.id: c.status for c in moe_lesson.claims_of(same, "en")}
    assert status["moe_beats_active"] == status["total_beats_moe"] == "not_shown"
    assert status["balance_evens"] == status["dead_without"] == "not_shown"


def test_a_uniform_router_has_no_dead_expert_and_a_collapsed_one_shows_the_claim(result):
    b = by_name(result)
    even = [[0.25] * 4] * 2
    assert moe_lesson.dead_experts(even) == 0
    collapsed = [[1.0, 0.0, 0.0, 0.0], [0.97, 0.01, 0.01, 0.01]]
    assert moe_lesson.dead_experts(collapsed) == 6
    routing = lambda share: dataclasses.replace(b["moe"].routing, share=share)  # noqa: E731
    runs_even = {
        **b,
        "moe": fake(b["moe"], dead=0, busiest=0.25, routing=routing(even)),
        "moe_free": fake(b["moe_free"], dead=0, busiest=0.25, routing=routing(even)),
    }
    status = {c.id: c.status for c in moe_lesson.claims_of(runs_even, "en")}
    assert status["dead_without"] == status["balance_evens"] == "not_shown"
    runs_collapsed = {**runs_even, "moe_free": fake(b["moe_free"], dead=6, busiest=1.0, routing=routing(collapsed))}
    one_seed = {c.id: c.status for c in moe_lesson.claims_of(runs_collapsed, "en")}
    assert one_seed["dead_without"] == one_seed["balance_evens"] == "not_shown"  # one seed is a coin's toss
    pairs = [moe_lesson.pair_of(runs_collapsed, seed) for seed in range(moe_lesson.SEEDS)]
    status = {c.id: c.status for c in moe_lesson.claims_of(runs_collapsed, "en", pairs)}
    assert status["dead_without"] == status["balance_evens"] == "shown"


def test_the_balancing_claims_count_seeds_against_a_coin(result):
    """5 of 5 seeds is the least count a fair coin reaches with probability under 5% (1/32; 4 of 5: 6/32), and one
    seed's large effect with the others the other way is no verdict."""
    assert moe_lesson.SEEDS == 5 and 0.5**5 < 0.05 < (1 + 5) * 0.5**5
    r = result
    assert [p.seed for p in r.pairs] == [r.params["seed"] + i for i in range(moe_lesson.SEEDS)]
    b = by_name(r)
    assert (r.pairs[0].moe_busiest, r.pairs[0].free_busiest) == (b["moe"].busiest, b["moe_free"].busiest)
    claims = {c.id: c for c in r.claims}
    evens = claims["balance_evens"]
    differ = [p for p in r.pairs if p.moe_busiest != p.free_busiest]
    assert evens.values["n"] == len(differ) and evens.values["k"] == sum(p.moe_busiest < p.free_busiest for p in differ)
    lucky = [moe_lesson.Pair(0, 0.26, 0.44, 0, 0)] + [moe_lesson.Pair(i, 0.33, 0.32, 0, 0) for i in range(1, 5)]
    status = {c.id: c.status for c in moe_lesson.claims_of(b, "en", lucky)}
    assert status["balance_evens"] == "not_shown"  # the mean share still drops by 3 points: not what counts
    reversed_ = [moe_lesson.Pair(i, 0.40, 0.30, 2, 0) for i in range(5)]
    status = {c.id: c.status for c in moe_lesson.claims_of(b, "en", reversed_)}
    assert status["balance_evens"] == status["dead_without"] == "contradicted"  # the opposite on every seed


def test_the_loss_claims_can_go_either_way(result):
    b = by_name(result)
    better = {
        **b,
        "moe": fake(b["moe"], loss=1.0),
        "dense_active": fake(b["dense_active"], loss=1.2),
        "dense_total": fake(b["dense_total"], loss=1.3),
    }
    status = {c.id: c.status for c in moe_lesson.claims_of(better, "en")}
    assert status["moe_beats_active"] == "shown" and status["total_beats_moe"] == "contradicted"


def test_a_twin_of_the_wrong_size_contradicts_the_fairness_identities(result):
    b = by_name(result)
    wrong = {
        **b,
        "dense_active": fake(b["dense_active"], total_params=b["dense_active"].total_params + 1),
        "dense_total": fake(b["dense_total"], total_params=b["dense_total"].total_params - 32),
    }
    status = {c.id: c.status for c in moe_lesson.claims_of(wrong, "en")}
    assert status["equal_active"] == status["equal_total"] == "contradicted"


def test_every_model_is_reported_from_the_start():
    seen = []
    real = progress.Progress()

    class Watch(progress.Progress):
        def update(self, name, step, steps):
            seen.append((name, step))
            real.update(name, step, steps)

    with progress.reporting(Watch()):
        r = stored("moe", lang="zh", train_steps=10, seed=5, n_experts=3, top_k=2)
    assert seen[:5] == [(name, 0) for name in (*runs.MODELS, "seeds")]
    # the two MoEs on 4 more seeds count on one bar of their own
    assert {m["name"]: m["step"] for m in real.snapshot()} == {**dict.fromkeys(runs.MODELS, 10), "seeds": 80}
    # top-2: two choices a token, and the twins still differ by exactly the routers and merged biases
    assert all(sum(layer) == 2 * r.n_eval_tokens for layer in by_name(r)["moe"].routing.tokens_per_expert)
    assert {c.id: c.status for c in r.claims}["equal_active"] == "shown"
    assert {c.id: c.status for c in r.claims}["equal_total"] == "shown"


def test_a_file_is_held_out_by_its_last_tenth(tmp_path):
    text = "".join(chr(0x4E00 + (i * 7) % 40) for i in range(300))  # 300 characters of 40 kinds
    path = tmp_path / "t.txt"
    path.write_text(text, encoding="utf-8")
    data = runs.corpus_data(str(path))
    assert data.held_out and len(data.val) == 30 and len(data.train) + len(data.val) == len(text) + 1
    r = stored("moe", lang="en", corpus=str(path), train_steps=10)
    assert r.held_out and "last tenth" in r.note


def test_top_k_larger_than_the_experts_is_refused():
    from attnlab.lessons.common.params import ParamError

    with pytest.raises(ParamError, match="top_k must be at most n_experts"):
        stored("moe", n_experts=2, top_k=3)

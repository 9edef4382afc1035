"""The `patching` topic held to exact references (a head's zero ablation is its W_O columns zeroed, a patch's
restored nats are log p of the patched run, a character's importance is plain forward passes over the replaced
inputs, Spearman's ρ is the closed form, the windows' chance level is a 5% test, the seed count's twins train on
the same characters in another order), its claims at the defaults, and each claim's null: the model untrained (the
twins tie), clean = corrupt, attention made uniform, independent pairs, a reading that is importance."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import torch
from results import result

from attnlab.inspect import Site, log_prob, patch
from attnlab.lessons.common.claims import status_of
from attnlab.lessons.common.params import ParamError
from attnlab.lessons.explain import as_dict
from attnlab.lessons.patching import lesson as L
from attnlab.lessons.patching import measure, seeds
from attnlab.lessons.patching import model as runs

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.slow,
]  # trains or starts processes; tiny models: one CPU thread, as the lab runs them
DEFAULT = ("", 2, 4, 100, 0)  # corpus, n_layers, n_heads, train_steps, seed: the lesson's defaults


@pytest.fixture(scope="module")
def r():
    return result("patching", lang="en")


# a seed count of ties, for the claims that only read the correlations
TIES = [seeds.SeedRow(s, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0) for s in range(seeds.N_SEEDS)]


def claims(result) -> dict:
    return {c.id: c for c in result.claims}


def test_json_has_every_reading_with_its_shape(r):
    d = json.loads(json.dumps(as_dict(r)))
    L_, H, T = 2, 4, 4
    for name in ("trained", "untrained"):
        x = d[name]
        for key in (
            "drop_zero",
            "drop_mean",
            "drop_resample",
            "restore_heads",
            "restored_nats",
            "weight_key",
            "weight_prev",
        ):
            assert np.shape(x[key]) == (L_, H), key
        assert np.shape(x["restore_resid"]) == (L_ + 1, T)
        assert len(x["rollout"]) == len(x["attention"]) == len(x["importance"]) == T
    assert (d["prompt"], d["corrupt"], d["answer"], d["key"]) == ("床前明月", "床望明月", "光", 2)
    assert d["positions"] == ["床", "前→望", "明", "月"] and len(d["resid_rows"]) == L_ + 1
    assert len(d["heads"]) == L_ * H and len(d["tokens"]) == T
    assert [s["seed"] for s in d["seeds"]] == list(range(seeds.N_SEEDS))  # the lesson's seed and the next ones
    assert [c["name"] for c in d["correlations"]] == ["head_weight", "token_attention", "token_rollout"]
    n_pairs = d["n_examples"] * (T - 1)
    assert np.shape(d["head_pairs"]) == (n_pairs * L_ * H, 2) and np.shape(d["token_pairs"]) == (n_pairs, 3)
    for c in d["claims"]:  # every verdict can be redone from the printed numbers
        assert c["status"] == status_of(c["direction"], c["measured"], c["baseline"], c["margin"]), c["id"]


def test_zero_ablation_is_the_heads_columns_of_W_O_zeroed(r):
    model = runs.models(*DEFAULT)[0]
    clean, answer = torch.tensor([[0, 1, 2, 3]]), 4  # 床前明月 → 光 in the char tokenizer of 静夜思
    assert runs.corpus_data("").tokenizer.decode([0, 1, 2, 3, 4]) == "床前明月光"
    with torch.no_grad():
        base = log_prob(model(clean), answer, -1)
        for layer in range(2):
            for head in range(4):
                edited = copy.deepcopy(model)
                edited.blocks[layer].attn.W_O.weight[:, head * 8 : (head + 1) * 8] = 0  # d_k = 32 / 4
                lost = (base - log_prob(edited(clean), answer, -1)).item()
                assert r.trained.drop_zero[layer][head] == pytest.approx(lost, abs=1e-5)
    # the lesson's own finding: the first layer's first head matters, and zero ablation is not mean ablation
    assert max(abs(v) for row in r.trained.drop_zero for v in row) > 1.0


def test_patching_numbers_are_the_patched_runs_log_p(r):
    model = runs.models(*DEFAULT)[0]
    tok = runs.corpus_data("").tokenizer
    clean, corrupt, answer = torch.tensor(tok.encode("床前明月")), torch.tensor(tok.encode("床望明月")), 4
    with torch.no_grad():
        lp_clean, lp_corrupt = (
            log_prob(model(clean[None]), answer, -1).item(),
            log_prob(model(corrupt[None]), answer, -1).item(),
        )
    assert (r.trained.lp_clean, r.trained.lp_corrupt) == (
        pytest.approx(lp_clean, abs=1e-5),
        pytest.approx(lp_corrupt, abs=1e-5),
    )
    for layer, head in [(0, 0), (0, 1), (1, 3)]:
        patched = log_prob(
            patch(model, clean, corrupt, Site(f"layers.{layer}.attn.head_outputs", head=head)), answer, -1
        )
        assert r.trained.restored_nats[layer][head] == pytest.approx(patched.item() - lp_corrupt, abs=1e-4)
    resid = np.array(r.trained.restore_resid)
    assert resid[-1, -1] == pytest.approx(1, abs=1e-5) and resid[0, 1] == pytest.approx(
        1, abs=1e-5
    )  # the answer; the change
    assert (
        np.abs(resid[:, 0]).max() < 1e-6 and np.abs(resid[-1, :-1]).max() < 1e-6
    )  # before the change; nothing reads them


def test_token_importance_is_plain_forward_passes_over_the_replaced_inputs(r):
    model = runs.models(*DEFAULT)[0]
    clean, V = torch.tensor([0, 1, 2, 3]), r.vocab_size
    with torch.no_grad():
        lp = torch.log_softmax(model(clean[None])[0, -1], -1)[4]
        for c in range(3):
            rows = [torch.cat([clean[:c], torch.tensor([v]), clean[c + 1 :]]) for v in range(V) if v != clean[c]]
            out = torch.log_softmax(model(torch.stack(rows))[:, -1], -1)[:, 4]  # (V - 1,)
            assert r.trained.importance[c] == pytest.approx((out - lp).mean().abs().item(), abs=1e-5)
    assert r.trained.importance[-1] is None


def test_spearman_is_the_closed_form_and_the_shuffled_level_is_chance():
    g = np.random.default_rng(0)
    a, b = g.normal(size=50), g.normal(size=50)
    d = measure.ranks(a) - measure.ranks(b)
    assert measure.spearman(a, b) == pytest.approx(1 - 6 * (d**2).sum() / (50 * (50**2 - 1)), abs=1e-12)
    assert measure.spearman(a, np.exp(3 * a)) == pytest.approx(1.0)  # ranks only: any increasing map is ρ = 1
    assert measure.spearman(a, -a) == pytest.approx(-1.0) and measure.spearman(a, np.ones(50)) is None
    assert list(measure.ranks(np.array([3.0, 1.0, 3.0, 2.0]))) == [2.5, 0, 2.5, 1]  # ties share their mean rank
    mean, q95 = measure.shuffled(g.normal(size=400), g.normal(size=400), seed=1, units=400)  # each pair its own
    assert abs(mean) < 0.01 and q95 == pytest.approx(1.645 / np.sqrt(399), abs=0.012)  # the normal approximation


def test_claims_at_the_defaults(r):
    c = claims(r)
    for name in ("corruption_matters", "one_head_restores", "weights_not_importance"):
        assert c[name].status == "shown", c[name].versus
    # the twin trained on the characters shuffled also has one head that matters most: no more often than a coin
    assert c["few_heads"].status == "not_shown"
    for name, field in (
        ("corruption_matters", "gap"),
        ("few_heads", "top_lead"),
        ("one_head_restores", "best_restored"),
    ):
        wins = sum(getattr(s, field) > getattr(s, field + "_shuffled") for s in r.seeds)  # recounted from the table
        assert c[name].values["k"] == wins and c[name].values["n"] == seeds.N_SEEDS and c[name].values["chance"] == 0.5
    assert r.remeasured > c["weights_not_importance"].measured + 0.5  # the effects agree with themselves far better
    by = {x.name: x for x in r.correlations}
    assert by["head_weight"].rho < 0.5  # the course's point, measured: the weights rank the heads poorly
    for name in ("head_weight", "token_attention", "token_rollout"):
        x, claim = by[name], c[f"{name}_tracks"]
        assert claim.holds == (x.rho >= x.chance_q95)  # shown exactly when ρ clears the shuffled 95th percentile


def test_null_untrained_model_shows_nothing_about_training():
    # 0 steps: the model is its own control, so every comparison with the untrained model is a tie
    u = result("patching", train_steps=0, n_layers=1, n_heads=2)
    c = claims(u)
    for name in ("corruption_matters", "few_heads", "one_head_restores"):
        # every twin ties (both are the untrained start): no seed is a toss, nothing counted, never contradicted
        assert c[name].status == "not_shown" and c[name].values["n"] == 0 == c[name].measured, name


def test_null_equal_clean_and_corrupt_leaves_nothing_to_restore(r):
    same = result("patching", corrupt="床前明月")
    assert same.no_gap and not same.changed and same.trained.restore_resid is None and same.trained.gap == 0
    c = claims(same)
    for name in ("corruption_matters", "one_head_restores"):
        assert c[name].status == "not_shown", name
    assert same.key == 3  # no change: the key position is the previous token


def test_null_uniform_attention_reads_nothing():
    # W_Q = 0: every score is 0, so each query spreads its weight evenly; in one layer rollout is even too
    model = copy.deepcopy(runs.models("", 1, 2, 0, 0)[0])
    with torch.no_grad():
        model.blocks[0].attn.W_Q.weight.zero_()
        model.blocks[0].attn.W_Q.bias.zero_()
    data = runs.corpus_data("")
    pairs = measure.pairs(model, measure.windows(data.ids, 5, 4), data.tokenizer.vocab_size)
    corr = L.correlations(pairs, 0, "en")
    assert all(x.rho is None for x in corr) and np.allclose(pairs.head_weight, 0.25)  # 1/T for T = 4
    c = {x.id: x for x in L.claims_of(TIES, corr, pairs.remeasured(), "en")}
    for name in ("head_weight_tracks", "token_attention_tracks", "token_rollout_tracks", "weights_not_importance"):
        assert c[name].status == "not_shown", name


def pairs_of(w, effect, halves, g, windows=12):
    P = len(w)
    return measure.Pairs(w, effect, halves, g.random(P), g.random(P), g.random(P), [([], 0)] * windows)


def test_null_independent_pairs_and_a_reading_that_is_importance():
    g = np.random.default_rng(3)
    P, Lh = 60, (2, 4)
    w = g.random((P, *Lh))
    e = g.random((P, *Lh))
    independent = pairs_of(w, e, np.stack([e, e], 1), g)
    c = {x.id: x for x in L.claims_of(TIES, L.correlations(independent, 0, "en"), independent.remeasured(), "en")}
    for name in ("head_weight_tracks", "token_attention_tracks", "token_rollout_tracks"):
        assert c[name].status == "not_shown", name
    # the weights ARE importance: the effects are the weights, measured twice with a little noise each time
    halves = np.stack([w + 0.01 * g.random(w.shape), w + 0.01 * g.random(w.shape)], 1)  # (P, 2, L, H)
    perfect = pairs_of(w, halves.mean(1), halves, g)
    c = {x.id: x for x in L.claims_of(TIES, L.correlations(perfect, 0, "en"), perfect.remeasured(), "en")}
    assert c["head_weight_tracks"].status == "shown" and c["weights_not_importance"].status == "not_shown"
    # the weights are importance, but importance is measured with much noise: ρ = 1 was the old control, and ρ
    # falls more than 0.5 below it; importance measured again falls as far, so the weights do not fall short
    noisy = np.stack([w + 3 * g.random(w.shape), w + 3 * g.random(w.shape)], 1)  # (P, 2, L, H)
    exact = pairs_of(w, noisy.mean(1), noisy, g)
    c = {x.id: x for x in L.claims_of(TIES, L.correlations(exact, 0, "en"), exact.remeasured(), "en")}
    assert c["weights_not_importance"].measured < 0.5 and c["weights_not_importance"].status == "not_shown"


def test_the_windows_chance_level_is_a_5_percent_test_where_pairs_share_a_window():
    """Each window's pairs share one value (its forward pass), weights and effects independent across windows:
    a shuffle of single pairs would call chance a correlation far more often than 5%; whole windows do not."""
    g = np.random.default_rng(11)
    E, k, draws = 12, 24, 200  # 12 windows of 3 positions × 8 heads, as at the defaults
    shown = cells = 0
    for i in range(draws):
        a = (g.normal(size=(E, 1)) + 0.1 * g.normal(size=(E, k))).ravel()  # (E·k,): a window's pairs alike
        b = (g.normal(size=(E, 1)) + 0.1 * g.normal(size=(E, k))).ravel()
        rho = measure.spearman(a, b)
        shown += rho >= measure.shuffled(a, b, i, E)[1]
        cells += rho >= measure.shuffled(a, b, i, len(a))[1]  # every pair its own unit: the old, too low bar
    # Binomial(200, 0.05): 19 or more with probability under 0.5%; the pair shuffle far above
    assert shown < 19 and cells > 50, (shown, cells)


def test_the_seed_count_trains_twins_on_the_same_characters_in_another_order(r):
    text, shuffled = runs.train_ids("", False, 0), runs.train_ids("", True, 0)
    assert torch.equal(text, runs.corpus_data("").ids) and not torch.equal(text, shuffled)
    assert torch.equal(torch.bincount(text), torch.bincount(shuffled))  # every character's count kept
    first = r.seeds[0]  # the lesson's own model, read as the table of the prediction reads it
    assert (first.gap, first.top_lead, first.best_restored) == pytest.approx(
        (r.trained.gap, r.trained.top_lead, r.trained.best_restored), abs=1e-6
    )
    twin = runs.twin("", 2, 4, 100, 1, True)  # seed 1's twin: its gap from two plain forward passes
    tok = runs.corpus_data("").tokenizer
    clean, corrupt = torch.tensor(tok.encode("床前明月")), torch.tensor(tok.encode("床望明月"))
    with torch.no_grad():
        gap = log_prob(twin(clean[None]), 4, -1) - log_prob(twin(corrupt[None]), 4, -1)
    assert r.seeds[1].gap_shuffled == pytest.approx(gap.item(), abs=1e-5)


@pytest.mark.parametrize(
    "kw, field, words",
    [
        (dict(corrupt="床前明月光"), "corrupt", "as many characters as prompt"),
        (dict(prompt="床", corrupt="前"), "prompt", "at least 2 characters"),
        (dict(corrupt="床前明X"), "corrupt", "not in it: X"),
        (dict(target="X"), "target", "not in it: X"),
        (dict(n_heads=3), "n_heads", "must divide"),
    ],
)
def test_bad_input_is_named(kw, field, words):
    with pytest.raises(ParamError, match=words) as err:
        result("patching", **kw)
    assert err.value.name == field and err.value.key

"""word2vec: the hand-written skip-gram gradient against torch's autograd (float64, to rounding), the noise
distribution against count^0.75, the pairs against a brute-force count, the measures against cases whose answer is
known, and the lesson's claims with their nulls (0 steps, an untrained GPT, a shuffled corpus)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from results import result

from attnlab.lessons.common.params import ParamError
from attnlab.lessons.common.rank_correlation import spearman
from attnlab.lessons.explain import as_dict
from attnlab.lessons.word2vec import measure as ms
from attnlab.models.word2vec import (
    SkipGram,
    autograd_step,
    gradients,
    noise_distribution,
    pairs,
    sgd_step,
    table_gradients,
)

pytestmark = pytest.mark.slow  # trains the lesson's models

FAST = dict(train_steps=300, gpt_steps=100)  # the page's defaults but a shorter GPT: ~1 s


def tiny(seed=0, V=7, d=5):
    g = torch.Generator().manual_seed(seed)
    model = SkipGram(V, d, generator=g)
    with torch.no_grad():
        model.W_out.normal_(generator=g)  # W_out starts at 0: give it values so every term of the gradient counts
    return model


def test_closed_form_gradient_equals_autograd_per_pair():
    g = torch.Generator().manual_seed(1)
    v = torch.randn(4, 6, dtype=torch.float64, generator=g, requires_grad=True)  # (B, d)
    u_o = torch.randn(4, 6, dtype=torch.float64, generator=g, requires_grad=True)  # (B, d)
    u_k = torch.randn(4, 3, 6, dtype=torch.float64, generator=g, requires_grad=True)  # (B, K, d)
    loss = -torch.nn.functional.logsigmoid((u_o * v).sum(-1)) - torch.nn.functional.logsigmoid(
        -torch.einsum("bkd,bd->bk", u_k, v)
    ).sum(-1)  # (B,): the pairs are independent, so sum() separates them
    loss.sum().backward()
    d_v, d_uo, d_uk = gradients(v.detach(), u_o.detach(), u_k.detach())
    for mine, torchs in ((d_v, v.grad), (d_uo, u_o.grad), (d_uk, u_k.grad)):
        assert torch.allclose(mine, torchs, rtol=0, atol=1e-12)


def test_table_gradient_equals_autograd_with_repeated_characters():
    """A centre that repeats, a context that is also a negative, a negative drawn twice: the sums must match."""
    model = tiny()
    center = torch.tensor([0, 0, 3, 5])
    context = torch.tensor([1, 2, 0, 1])
    negatives = torch.tensor([[1, 4, 4], [6, 2, 0], [3, 3, 3], [1, 2, 5]])
    G_in, G_out = table_gradients(model, center, context, negatives)
    model(center, context, negatives).mean().backward()
    assert torch.allclose(G_in, model.W_in.grad, rtol=0, atol=1e-12)
    assert torch.allclose(G_out, model.W_out.grad, rtol=0, atol=1e-12)
    assert model.W_in.grad.abs().max() > 1e-3 and model.W_out.grad.abs().max() > 1e-3  # not a 0 = 0 check


def test_a_hand_sgd_step_is_the_autograd_sgd_step():
    a, b = tiny(2), tiny(2)
    center, context = torch.tensor([0, 1, 1]), torch.tensor([2, 2, 6])
    negatives = torch.tensor([[3, 4], [3, 0], [5, 5]])
    la = sgd_step(a, center, context, negatives, lr=0.7)
    lb = autograd_step(b, center, context, negatives, lr=0.7)
    assert la == pytest.approx(lb, abs=1e-14)
    assert torch.allclose(a.W_in, b.W_in, rtol=0, atol=1e-12) and torch.allclose(a.W_out, b.W_out, rtol=0, atol=1e-12)
    assert not torch.equal(a.W_in, tiny(2).W_in)  # the step moved something


def test_noise_distribution_is_count_to_the_three_quarters():
    counts = torch.tensor([0, 1, 4, 16, 81])
    p = noise_distribution(counts)
    expected = torch.tensor([0, 1, 4**0.75, 16**0.75, 81**0.75], dtype=torch.float64)
    assert torch.allclose(p, expected / expected.sum(), rtol=0, atol=1e-15) and p[0] == 0
    # what torch.multinomial then draws: each share within 5 standard errors of the closed form
    n = 200_000
    drawn = (
        torch.bincount(
            torch.multinomial(p, n, replacement=True, generator=torch.Generator().manual_seed(0)), minlength=5
        ).double()
        / n
    )
    assert torch.all((drawn - p).abs() <= 5 * torch.sqrt(p * (1 - p) / n) + 1e-12)
    # 3/4 flattens: the rarest seen character gets more than its share, the most frequent less
    share = counts.double() / counts.sum()
    assert p[1] > share[1] and p[4] < share[4]


def test_pairs_are_every_neighbour_within_the_window_but_none_across_texts():
    ids = torch.tensor([0, 1, 2, 9, 3, 1])  # 9: the end-of-text mark
    c, o = pairs(ids, 2, skip=9)
    got = sorted(zip(c.tolist(), o.tolist()))
    brute = sorted(
        (int(ids[i]), int(ids[j]))
        for i in range(len(ids))
        for j in range(len(ids))
        if i != j and abs(i - j) <= 2 and 9 not in (int(ids[i]), int(ids[j]))
    )
    assert got == brute
    counts = ms.context_counts(ids.numpy(), 10, [1, 3], 2, 9)  # the same pairs, counted per centre
    assert counts[0].sum() == sum(a == 1 for a, _ in got) and counts[1, 1] == sum(p == (3, 1) for p in got)


def test_measures_on_cases_whose_answer_is_known():
    onehot = ms.cosines(np.eye(5))
    assert np.all(ms.upper(onehot) == 0) and spearman(ms.upper(onehot), np.arange(10.0)) is None  # undefined
    x = np.array([0.1, 0.5, 0.2, 0.9, 0.3])
    assert spearman(x, np.exp(3 * x)) == pytest.approx(1.0) and spearman(x, -x) == pytest.approx(-1.0)
    E = np.array([[1.0, 0, 0], [0, 1, 0], [0, 0, 1], [1, -1, 1], [0.2, 0.1, 0.3]])
    assert ms.analogy(E, 0, 1, 2, list(range(5)))[0] == 3  # e0 - e1 + e2 is row 3 exactly
    S = np.array([[1, 0.9, 0.1], [0.9, 1, 0.2], [0.1, 0.2, 1]])
    C = np.array([[1, 0.8, -0.5], [0.8, 1, 0.0], [-0.5, 0.0, 1]])
    assert ms.neighbour_score(C, S, 1) == pytest.approx((0.9 + 0.9 + 0.2) / 3)


def test_lesson_json_shape_and_claims_at_the_defaults():
    r = result("word2vec", **FAST)
    d = json.loads(json.dumps(as_dict(r)))
    assert d["topic"] == "word2vec" and d["corpus"] == "静夜思" and d["vocab_size"] == 20
    assert d["n_pairs"] == 90  # 24 characters, window 2, no pair across the end-of-text mark: 2·(23 + 22)
    assert d["loss_first"] == pytest.approx(6 * math.log(2)) and d["loss_last"] < d["loss_first"]  # W_out starts at 0
    assert [q["char"] for q in d["queries"]] == list("月头思") and all(len(q["neighbours"]) == 5 for q in d["queries"])
    assert (
        d["skipped"] == ["冬-夏+春=秋", "后-前+下=上", "北-南+西=东", "地-天+日=月"]
        and len(d["analogies"]) == 2
        and len(d["pca"]) == d["n_compared"]
    )
    a = d["analogies"][0]
    assert a["chance_rank"] == (a["n_candidates"] + 1) / 2 and 1 <= a["rank"] <= a["n_candidates"]
    assert sum(x["noise"] for x in d["noise"]) <= 1
    status = {c["id"]: c["status"] for c in d["claims"]}
    assert status["hand_gradient"] == "shown" and d["gradient_error"] < 1e-12
    assert status["neighbours_share_contexts"] == "shown" and status["distributional"] == "shown"
    for c in d["claims"]:
        assert c["control"] and c["margin"] is not None and c["baseline"] is not None


def test_nulls_zero_steps_untrained_gpt_and_a_shuffled_corpus_show_nothing():
    zero = result("word2vec", train_steps=0, gpt_steps=0)
    assert {c.id: c.status for c in zero.claims} == {
        "hand_gradient": "shown",
        "neighbours_share_contexts": "not_shown",
        "distributional": "not_shown",
        "agrees_with_gpt": "not_shown",
    }
    assert zero.context_corr == zero.context_corr_init and zero.neighbour_score == zero.neighbour_score_init  # a tie
    for seed in (0, 1):
        # trained on the characters shuffled, the models are their own twins: every claim ties, never a verdict
        shuffled = result("word2vec", shuffle=True, seed=seed, **FAST)
        assert shuffled.shuffled and all(c.status == "not_shown" for c in shuffled.claims[1:]), seed
        assert all(c.measured == c.baseline for c in shuffled.claims[1:]), seed
        assert shuffled.context_corr == shuffled.context_corr_shuffled != shuffled.context_corr_init


def test_the_twins_train_on_the_same_characters_in_another_order():
    from attnlab.lessons.word2vec import runs

    text = runs.read("", False, 0)
    assert torch.equal(text.train_ids, text.ids) and not torch.equal(text.null_ids, text.ids)
    assert torch.equal(text.null_ids.sort().values, text.ids.sort().values)  # every count kept
    eot = text.tokenizer.eot_id  # each text keeps its length: the marks between texts stay where they were
    assert torch.equal(text.null_ids == eot, text.ids == eot)
    r = result("word2vec", **FAST)  # on the real text the twin is a different model, below the trained one
    assert r.context_corr_shuffled != r.context_corr and r.neighbour_score_shuffled < r.neighbour_score


def test_autograd_training_reaches_the_same_vectors():
    hand = result("word2vec", train_steps=100, gpt_steps=0)
    auto = result("word2vec", train_steps=100, gpt_steps=0, autograd=True)
    assert auto.loss_last == pytest.approx(hand.loss_last, abs=1e-9)
    assert auto.context_corr == pytest.approx(hand.context_corr, abs=1e-9)


def test_bad_input_is_named():
    with pytest.raises(ParamError, match="analogies"):
        result("word2vec", analogies="月+明", train_steps=0, gpt_steps=0)
    with pytest.raises(ParamError, match="not in it: 海"):
        result("word2vec", chars="海", train_steps=0, gpt_steps=0)


DIVERGING = {"lr": 10.0, "batch": 16, "d": 32, "window": 5, "negatives": 20, "train_steps": 1000, "gpt_steps": 0}


def test_a_rate_that_makes_sgd_diverge_is_refused_in_one_line_and_stops_at_once():
    """At lr = 10 with many pairs a step the tables overflow after about 200 steps: the lesson stopped on inf and
    nan (each later step slower than the last: 40 s for 1,000 of them) and then failed inside its PCA (a 500).
    Now the training stops at the first loss that is not finite and the lesson refuses the rate, naming it."""
    from fastapi.testclient import TestClient

    from attnlab.i18n import t
    from attnlab.lessons.word2vec import runs
    from attnlab.models.word2vec import Diverged, train
    from attnlab.web.app import create_app

    with pytest.raises(ParamError, match="diverged at lr=10") as err:
        result("word2vec", **DIVERGING)
    assert err.value.name == "lr" and "\n" not in str(err.value)
    text = runs.read("", False, 0)
    with pytest.raises(Diverged) as early:  # where the lesson stopped: long before its 1,000 steps
        runs.train_skipgram(text, text.train_ids, 32, 5, 20, 1000, 16, 10.0, True, 0)
    assert 0 < early.value.step < 500
    assert t("explain.word2vec.error.diverged", "zh", param="lr", lr="10") in err.value.localized("zh")
    api = TestClient(create_app()).get("/api/explain/word2vec", params={**DIVERGING, "lang": "en"})
    assert api.status_code == 422 and api.json()["detail"][0]["loc"] == ["query", "lr"], api.text
    # the library's loop stops the moment a loss is inf or nan
    model = SkipGram(4, 2, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        model.W_in.fill_(float("inf"))
    with pytest.raises(Diverged) as stop:
        train(
            model,
            torch.tensor([0, 1]),
            torch.tensor([1, 2]),
            torch.ones(4) / 4,
            steps=5,
            batch=2,
            k=1,
            lr=0.1,
            generator=torch.Generator().manual_seed(0),
        )
    assert stop.value.step == 0

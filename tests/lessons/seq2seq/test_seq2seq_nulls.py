"""Every seq2seq claim fails on its null, and the defaults show what the course says.

Nulls, the effect absent by construction:
  * 0 training steps: untrained models translate nothing, so no attention model leads the one without attention
    (bottleneck, bottleneck_cross), nothing falls with length (falls), and no map is aligned (alignment,
    alignment_cross);
  * uniform attention maps (the lesson's `maps_of` replaced), on the default models: alignment and
    alignment_cross not shown, while the accuracies, which do not read those maps, still show the bottleneck;
  * a decoder that reads every encoder state (Bahdanau's, through the same check): final_only contradicted;
  * a library attention that no longer computes e = vᵀ tanh(W_s s + W_h h) (uniform α): alpha contradicted;
  * a tie between the attention model and the one without it, over two seeds: bottleneck not shown.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from results import result

from attnlab.lessons.common.claims import status_of
from attnlab.lessons.seq2seq import lesson as lesson_
from attnlab.lessons.seq2seq import task as task_
from attnlab.lessons.seq2seq.claims import claims_of
from attnlab.lessons.seq2seq.models import build
from attnlab.nn.recurrent import AdditiveAttention

pytestmark = pytest.mark.slow  # trains the lesson's models

IDS = ["bottleneck", "bottleneck_cross", "falls", "final_only", "alpha", "alignment", "alignment_cross"]
LEARNED = ["bottleneck", "bottleneck_cross", "falls", "alignment", "alignment_cross"]  # need training
TINY = {"n_test": 5, "n_seeds": 1, "text": "2026"}


def status(r) -> dict:
    return {c.id: c.status for c in r.claims}


def consistent(r) -> None:
    for c in r.claims:
        assert c.status == status_of(c.direction, c.measured, c.baseline, c.margin), c.id
        assert c.holds == (c.status == "shown") and c.control and c.versus


@pytest.fixture(scope="module")
def defaults():
    return result("seq2seq", lang="en")


def test_the_defaults_show_every_claim_and_the_typed_example(defaults):
    r = defaults
    assert r.params["task"] == "digits" and len(r.seeds) >= 2
    assert [c.id for c in r.claims] == IDS
    consistent(r)
    assert status(r) == dict.fromkeys(IDS, "shown"), [c.text + " | " + c.versus for c in r.claims if not c.holds]
    # the effect at the longest trained length is large, not a tie: every seed leads, by at least 20 points
    bottleneck = r.claims[0]
    assert bottleneck.margin >= 0.2 and all(g >= 0.2 for g in bottleneck.values["gap_by_seed"])
    # the page shows the typed example's translations with ✓ / ✗: both attention models translate it
    ex = r.example
    assert ex.source == "20261130" and ex.correct["bahdanau"] and ex.correct["transformer"]
    assert ex.alignment_score["bahdanau"] == 1.0 and ex.alignment_score["transformer"] == 1.0


def test_zero_training_steps_show_nothing_learned():
    r = result("seq2seq", lang="en", train_steps=0, **TINY)
    consistent(r)
    s = status(r)
    assert all(s[i] != "shown" for i in LEARNED), s
    assert s["final_only"] == "shown" and s["alpha"] == "shown"  # facts of the graph: true untrained too


def test_uniform_maps_align_no_better_than_chance(defaults, monkeypatch):
    def uniform_maps(model, src, tgt_in):
        return [torch.full_like(m, 1 / m.shape[-1]) for m in real(model, src, tgt_in)]

    real = lesson_.maps_of
    monkeypatch.setattr(lesson_, "maps_of", uniform_maps)
    try:  # the default models, measured afresh (another n_test: nothing cached is overwritten)
        r = result("seq2seq", lang="en", n_test=10)
        consistent(r)
        s = status(r)
        assert s["alignment"] != "shown" and s["alignment_cross"] != "shown", s
        assert r.alignment_score["bahdanau"] == pytest.approx(r.chance_alignment)
        assert s["bottleneck"] == "shown"  # accuracy does not read the maps: only the alignment claims fall
    finally:
        lesson_.trained.cache_clear()
        lesson_.typed_example.cache_clear()


def small(kind: str):
    torch.manual_seed(0)
    return build(kind, task_.SRC_VOCAB, task_.TGT_VOCAB, 16, 8).eval()


def test_a_decoder_reading_every_state_contradicts_final_only(defaults):
    src, tgt_in, _ = task_.encode("digits", ["20261130"])
    with torch.no_grad():
        checks = {**defaults.checks, **lesson_.final_state_check(small("bahdanau"), src, tgt_in)}
    r = dataclasses.replace(defaults, checks=checks)
    claims = {c.id: c for c in claims_of(r, "en")}
    assert checks["others_change"] > 0 and claims["final_only"].status == "contradicted"


def test_an_attention_that_is_not_the_formula_contradicts_alpha(defaults, monkeypatch):
    def uniform(self, query, states):  # (B, T, H), (B, S, H) -> context, alpha: no scores at all
        alpha = torch.full((*query.shape[:2], states.shape[1]), 1 / states.shape[1])
        return alpha @ states, alpha

    monkeypatch.setattr(AdditiveAttention, "forward", uniform)
    src, tgt_in, _ = task_.encode("digits", ["20261130"])
    with torch.no_grad():
        checks = {**defaults.checks, **lesson_.alpha_check(small("bahdanau"), src, tgt_in)}
    r = dataclasses.replace(defaults, checks=checks)
    claims = {c.id: c for c in claims_of(r, "en")}
    assert checks["alpha_hand_error"] > 1e-3 and claims["alpha"].status == "contradicted"


def test_a_tie_over_seeds_is_not_the_bottleneck(defaults):
    none = defaults.accuracy_by_seed["no_attention"]
    tied = {
        **defaults.accuracy_by_seed,
        "bahdanau": none,
        "transformer": [[min(1.0, a + 0.1) for a in run] for run in none],
    }
    r = dataclasses.replace(defaults, accuracy_by_seed=tied)
    claims = {c.id: c for c in claims_of(r, "en")}
    assert claims["bottleneck"].status == "not_shown" and claims["bottleneck"].values["gap"] == 0
    assert claims["bottleneck_cross"].status == "not_shown"  # 10 points is within the 20-point margin

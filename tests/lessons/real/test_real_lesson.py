"""The real-model lesson: head-pattern scores by hand, and the lesson's numbers against the model itself."""

from __future__ import annotations

import math

import pytest
import torch
from real_support import need_minilm

from attnlab.lessons.common.bad_input import BadInput
from attnlab.lessons.real.patterns import PATTERNS, is_sep_or_punct, pattern_scores

pytestmark = pytest.mark.slow  # loads the pretrained model and trains


def test_pattern_scores_equal_the_hand_values():
    A = torch.tensor([[0.5, 0.25, 0.25], [0.6, 0.3, 0.1], [0.2, 0.2, 0.6]])
    s = {k: float(v) for k, v in pattern_scores(A, [False, False, True]).items()}
    assert s["previous"] == pytest.approx((0.6 + 0.2) / 2)  # A[1,0], A[2,1]
    assert s["next"] == pytest.approx((0.25 + 0.1) / 2)  # A[0,1], A[1,2]
    assert s["self"] == pytest.approx((0.5 + 0.3 + 0.6) / 3)
    assert s["first"] == pytest.approx((0.5 + 0.6 + 0.2) / 3)
    assert s["sep_punct"] == pytest.approx((0.25 + 0.1 + 0.6) / 3)  # column 2 is the marked one
    h0 = 1.5 * math.log(2)  # -(0.5 ln 0.5 + 2 * 0.25 ln 0.25)
    h1 = -(0.6 * math.log(0.6) + 0.3 * math.log(0.3) + 0.1 * math.log(0.1))
    h2 = -(2 * 0.2 * math.log(0.2) + 0.6 * math.log(0.6))
    assert s["broad"] == pytest.approx((h0 + h1 + h2) / 3 / math.log(3))


def test_pattern_extremes():
    T = 5
    uniform = torch.full((T, T), 1 / T)
    shift = torch.zeros(T, T)
    shift[0, 0] = 1.0
    shift[torch.arange(1, T), torch.arange(T - 1)] = 1.0  # every query reads the token before it
    both = pattern_scores(torch.stack([uniform, shift]), [False] * T)  # (2,) each: maps batch fine
    assert both["broad"].tolist() == pytest.approx([1.0, 0.0])
    assert both["previous"].tolist() == pytest.approx([1 / T, 1.0])
    assert both["sep_punct"].tolist() == [0.0, 0.0]


def test_sep_and_punctuation_marks():
    assert [is_sep_or_punct(x) for x in ["[SEP]", "[CLS]", ".", "'", "##,", "it", "?!", "5"]] == [
        True,
        False,
        True,
        True,
        True,
        False,
        True,
        False,
    ]


# ---- on the model (loaded once for the module) ----------------------------------------------------------


@pytest.fixture(scope="module")
def real():
    need_minilm()
    from attnlab.lessons.real import lesson as real

    real.real_model()
    return real


def test_analysis_is_the_traced_model(real, one_thread):
    from attnlab.trace import trace

    r = real.analyse("A cat chases a mouse.", layer=2, head=7)
    assert r.tokens == ["[CLS]", "a", "cat", "chases", "a", "mouse", ".", "[SEP]"]
    assert (r.n_layers, r.n_heads) == (6, 12)
    model, tok = real.real_model()
    tr = trace(model, torch.tensor([r.ids]))
    w = torch.tensor(r.weights)  # (6, 12, T, T)
    assert w.shape == (6, 12, 8, 8)
    torch.testing.assert_close(w[1].double(), tr["layers.1.attn.weights"][0].double(), atol=1e-4, rtol=0)
    assert torch.allclose(w.sum(-1), torch.ones(6, 12, 8, dtype=w.dtype), atol=1e-3)
    d = r.detail
    assert (d.layer, d.head) == (2, 7) and d.weights == r.weights[1][6]
    v = tr.head(1, 6, "v")[0]  # (T, d_k)
    expected = tr.head(1, 6, "weights")[0] * v.norm(dim=-1)[None, :]  # a_ij ||v_j||
    torch.testing.assert_close(torch.tensor(d.contribution_norms).double(), expected.double(), atol=2e-3, rtol=0)
    assert d.disagreements == sum(a != b for a, b in zip(d.top_weight, d.top_contribution))
    scores = pattern_scores(tr["layers.0.attn.weights"][0], [is_sep_or_punct(x) for x in r.tokens])
    for p in PATTERNS:
        assert r.sentence_scores[p][0] == pytest.approx(scores[p].tolist(), abs=1e-3)


def test_head_patterns_rank_every_head(real):
    hp = real.head_patterns()
    for p in PATTERNS:
        ranked = hp.ranking[p]
        assert len(ranked) == 72 and len({(h.layer, h.head) for h in ranked}) == 72
        assert [h.score for h in ranked] == sorted((h.score for h in ranked), reverse=True)
        assert ranked[0].score == max(max(row) for row in hp.scores[p])
        assert all(0.0 <= h.score <= 1.0 + 1e-9 for h in ranked)


def test_refusals_name_the_input(real):
    with pytest.raises(BadInput, match="empty"):
        real.analyse("   ")
    with pytest.raises(BadInput, match="too long"):
        real.analyse("word " * 80)
    with pytest.raises(BadInput, match="layer must be"):
        real.analyse("hi", layer=7, head=1)
    with pytest.raises(BadInput, match="go together"):
        real.analyse("hi", layer=1)
    with pytest.raises(BadInput, match="whole-word"):
        real.embeddings("unaffable")


def test_coreference_counts_are_the_unrounded_per_head_weights(real):
    from attnlab.lessons.real.coref import TIE

    co = real.coreference("en")
    assert [c.id for c in co.cases] == ["tired", "wide", "heavy", "sturdy", "big", "small"]
    assert [p.id for p in co.pairs] == ["tired_wide", "heavy_sturdy", "big_small"]
    for case in co.cases:
        assert case.tokens[case.pronoun_index] == "it" and case.n_heads == 72
        first, second = case.candidates
        ties = [h for h in case.heads if abs(h.weights[first] - h.weights[second]) < TIE]
        assert case.n_ties == len(ties) and all(h.prefers is None for h in ties)
        untied = [h for h in case.heads if h not in ties]
        assert case.n_untied == len(untied)
        assert case.n_prefer_implied == sum(max(h.weights, key=h.weights.get) == case.implied for h in untied)
        assert case.n_prefer_implied + case.n_prefer_other + case.n_ties == 72
        assert case.n_prefer_first == sum(max(h.weights, key=h.weights.get) == first for h in untied)
        mean = {c: sum(h.weights[c] for h in case.heads) / 72 for c in case.candidates}
        assert mean == pytest.approx(case.mean_weight, abs=1e-3)
    # one sentence's count against a coin is no claim: its control is the partner sentence (the pairs' claims)
    assert not [c.id for c in co.claims if c.id.startswith("majority_")]
    for p in co.pairs:
        assert p.switched_with + p.switched_against + p.kept_first + p.kept_second == p.untied
        assert p.first_a - p.first_b == p.switched_with - p.switched_against
    assert "not an explanation" in co.caveat and "first noun" in co.finding


def test_embeddings_against_a_plain_cosine(real):
    e = real.embeddings("king", k=5, lang="en")
    model, tok = real.real_model()
    E = model.embed.tok.weight.detach().double()
    unit = E / E.norm(dim=-1, keepdim=True)
    king, queen = tok.id_of("king"), tok.id_of("queen")
    assert e.dense_cosine == pytest.approx(float(unit[king] @ unit[queen]), abs=1e-4)
    assert e.onehot_cosine == 0.0
    assert e.neighbours[0].cosine >= e.neighbours[-1].cosine and "king" not in [n.token for n in e.neighbours]
    v = E[king] - E[tok.id_of("man")] + E[tok.id_of("woman")]
    cos = unit @ (v / v.norm())
    assert e.analogy_cosine == pytest.approx(float(cos[queen]), abs=1e-4)
    better = [tok.token(i) for i in torch.nonzero(cos > cos[queen]).flatten().tolist()]
    better = [w for w in better if w.isalpha() and w.isascii() and w.islower() and w not in ("king", "man", "woman")]
    assert e.analogy_rank == len(better) + 1
    alone = unit @ unit[king]
    closer = [tok.token(i) for i in torch.nonzero(alone > alone[queen]).flatten().tolist()]
    closer = [w for w in closer if w.isalpha() and w.isascii() and w.islower() and w not in ("king", "man", "woman")]
    assert e.analogy_rank_king_alone == len(closer) + 1

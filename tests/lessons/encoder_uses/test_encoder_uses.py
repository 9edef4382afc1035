"""The encoder-uses topic (issue 40, part 4): MiniLM's mean-pooled sentence vectors against Hugging Face's BertModel
with the same weights, the nearest neighbours against scikit-learn's cosine similarities, the couplets' labels as
constructed, the pooled and per-token heads as their formulas, the baselines by hand, the claims at the defaults
and on their null, and the --json contract."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from real_support import need, need_minilm
from results import explained, quick_flags, result
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.lessons.common.claims import SHOWN, status_of
from attnlab.lessons.common.params import ParamError
from attnlab.lessons.encoder_uses import runs, sentences, task
from attnlab.lessons.explain import TOPICS, explain
from attnlab.text.couplets import CHARS, PARTNER

QUICK = TOPICS["encoder-uses"].quick
IDS = ["classifies", "tags", "neighbours"]


def test_minilm_sentence_vectors_are_hugging_faces_mean_pooled():
    need_minilm()
    need("transformers", "pip install transformers")
    from transformers import AutoTokenizer, BertModel

    from attnlab.pretrained import locate

    folder = str(locate("minilm"))
    hf, tok = BertModel.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)
    texts = sentences.SENTENCES[:4] + ["Where can I get something to eat?"]
    with torch.no_grad():
        batch = tok(texts, padding=True, return_tensors="pt")
        states = hf(**batch).last_hidden_state  # (N, T, d)
        mask = batch["attention_mask"][..., None].float()  # (N, T, 1): padding left out of the mean
        theirs = (states * mask).sum(1) / mask.sum(1)
    theirs = theirs / theirs.norm(dim=1, keepdim=True)
    assert torch.allclose(sentences.vectors(texts), theirs, atol=2e-5)


def test_nearest_neighbours_are_scikit_learns_cosine_argmax():
    from sklearn.metrics.pairwise import cosine_similarity

    g = torch.Generator().manual_seed(0)
    v = torch.randn(20, 7, generator=g, dtype=torch.float64)
    v = v / v.norm(dim=1, keepdim=True)
    sim = cosine_similarity(v.numpy())
    for i in range(20):
        sim[i, i] = -2
    assert sentences.nearest(v) == sim.argmax(1).tolist()
    bag = sentences.bag_vectors(sentences.SENTENCES)
    words = [sentences.words(s) for s in sentences.SENTENCES]
    i, j = 0, 3  # two sentences' cosine by word counts, by hand
    dot = sum(words[i][w] * words[j][w] for w in words[i])
    norm = lambda c: sum(x * x for x in c.values()) ** 0.5  # noqa: E731
    assert float(bag[i] @ bag[j]) == pytest.approx(dot / (norm(words[i]) * norm(words[j])))


def test_the_twenty_sentences_share_almost_no_words_within_a_topic():
    """A bag of words should find little: what two sentences of one topic share is mostly words like 'the'."""
    assert len(sentences.SENTENCES) == 20 and Counter(sentences.TOPIC_OF) == dict.fromkeys(sentences.TOPICS, 5)
    assert sentences.CHANCE == pytest.approx(4 / 19)
    for group in sentences.TOPICS.values():
        for a in group:
            for b in group:
                if a != b:
                    shared = set(sentences.words(a)) & set(sentences.words(b))
                    assert shared <= {"the", "a", "i", "in", "on", "to", "and", "every", "more", "my", "is"}, (a, b)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000))
def test_a_spoilt_couplet_has_exactly_one_wrong_character_and_it_is_labelled(seed):
    rng = random.Random(seed)
    first = "".join(rng.choice(CHARS) for _ in range(5))
    intact = f"{first}，{''.join(PARTNER[c] for c in first)}。"
    assert task.is_couplet(intact) and task.wrong_positions(intact) == []
    e = task.spoil(intact, rng)
    assert task.is_couplet(e.text) and task.wrong_positions(e.text) == [e.wrong]
    ids, spoilt, tags = task.encode([e, task.Example(intact, None)])
    assert spoilt.tolist() == [1, 0] and tags.sum(1).tolist() == [1, 0] and tags[0, e.wrong] == 1
    assert "".join(task.VOCAB[i] for i in ids[0].tolist()) == e.text


def test_the_data_is_fixed_half_spoilt_and_test_couplets_are_never_trained_on():
    train, test = task.examples()
    assert (train, test) == task.examples() and (len(train), len(test)) == (task.N_TRAIN, task.N_TEST)
    assert not {e.text[:5] for e in train} & {e.text[:5] for e in test}  # no 上联 on both sides
    for part in (train, test):
        share = sum(e.wrong is not None for e in part) / len(part)
        assert 0.45 < share < 0.55
        assert all(task.wrong_positions(e.text) == ([] if e.wrong is None else [e.wrong]) for e in part)
    shuffled = runs.labels_shuffled(train, 0)
    assert [e.text for e in shuffled] == [e.text for e in train]  # the same texts
    assert sorted(str(e.wrong) for e in shuffled) == sorted(str(e.wrong) for e in train)  # the same labels, moved


def test_the_heads_read_the_mean_pooled_vector_and_each_characters_state():
    model = runs.Uses(0).eval()
    ids = task.encode(task.examples()[1][:3])[0]  # (3, T)
    with torch.no_grad():
        v, line, per_char = model(ids)
        h = model.encoder(ids)  # (3, T, d)
    assert torch.allclose(v, h.mean(1)) and torch.allclose(line, h.mean(1) @ model.W_cls.weight.T + model.W_cls.bias)
    assert torch.allclose(per_char, h @ model.W_tag.weight.T + model.W_tag.bias)


def test_found_and_the_frequency_tagger_by_hand():
    examples = [task.Example("天山红日高，地水绿雨低。", 9), task.Example("天山红日高，地水绿月低。", None)]
    scores = torch.zeros(2, task.LENGTH)
    scores[0, 9] = 1.0  # points at the wrong one
    assert runs.found(scores, examples) == 1.0
    scores[0, 0] = 5.0  # the 上联 is never a candidate: still right
    assert runs.found(scores, examples) == 1.0
    scores[0, 7] = 2.0
    assert runs.found(scores, examples) == 0.0
    base = runs.baselines(False)
    train, _ = task.examples()
    ch = "雨"
    wrong = sum(e.wrong is not None and e.text[e.wrong] == ch for e in train)
    seen = sum(e.text[6:11].count(ch) for e in train)
    assert base["rate"][ch] == pytest.approx(wrong / seen)


def test_bad_input_is_refused_with_the_parameter_named():
    for text in ("天山红日高地水绿月低", "天山红日星，地水绿月低。", "abcde，fghij。"):
        with pytest.raises(ParamError) as err:
            explain("encoder-uses", text=text, **QUICK)
        assert err.value.name == "text"
    with pytest.raises(ParamError) as err:
        explain("encoder-uses", query="   ", **QUICK)
    assert err.value.name == "query"


@pytest.mark.slow  # trains
def test_quick_settings_keep_the_contract():
    r = result("encoder-uses", "en", **QUICK)
    assert [c.id for c in r.claims] == IDS
    for c in r.claims:
        assert c.status == status_of(c.direction, c.measured, c.baseline, c.margin) and c.control and c.versus
    assert len(r.accuracy["encoder"]) == len(r.found["encoder"]) == QUICK["seeds"]
    c = r.couplet
    assert c.text == "天山红日高，地水绿雨低。" and c.wrong == [9] and len(c.p_wrong) == len(c.chars) == task.LENGTH
    assert all(0 <= p <= 1 for p in c.p_wrong) and 0 <= c.p_spoilt <= 1 and len(c.neighbours) == 3
    s = r.sentences
    assert s.installed and len(s.nearest) == len(s.hits) == 20 and len(s.query_nearest) == 3
    cos = [q["cosine"] for q in s.query_nearest]
    assert cos == sorted(cos, reverse=True)


@pytest.mark.slow  # trains
def test_at_the_defaults_every_use_beats_its_baseline_and_the_null_shows_nothing():
    need_minilm()
    r = explained("encoder-uses", "en")
    assert {c.id: c.status for c in r.claims} == dict.fromkeys(IDS, SHOWN)
    for c in r.claims[:2]:  # labels shuffled across the couplets: nothing learned
        assert c.null["status"] != SHOWN, (c.id, c.null)
    assert r.claims[2].null["name"] == "chance"
    # far from any margin: the encoder reads the pair five places away, the counts cannot
    assert min(r.accuracy["encoder"]) - r.accuracy["bag"] > 0.25 and abs(r.accuracy["bag"] - 0.5) < 0.08
    assert min(r.found["encoder"]) - r.found["frequency"] > 0.4 and r.found["frequency"] < 0.3
    s = r.sentences
    assert sum(s.hits) >= 17 and sum(s.bag_hits) <= 6  # meaning, not shared words
    assert r.couplet.p_wrong.index(max(r.couplet.p_wrong)) == 9  # the typed couplet's wrong 雨 is found
    assert TOPICS["encoder-uses"].answer(r).option == "b"


@pytest.mark.slow  # trains
def test_the_json_carries_the_three_uses():
    out = CliRunner().invoke(app, ["explain", "encoder-uses", *quick_flags("encoder-uses"), "--json", "--lang", "en"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)  # progress goes to stderr
    assert set(data["accuracy"]) == {"encoder", "bag"} and set(data["found"]) == {"encoder", "frequency"}
    assert data["sentences"]["sentences"] == sentences.SENTENCES and [c["id"] for c in data["claims"]] == IDS

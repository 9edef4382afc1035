"""The logit-lens topic held to references we did not write: the model's own forward pass, and the same model cut
after l blocks (torch runs what is left); its claims against their nulls (train_steps = 0: the trained model IS the
untrained control; `shuffle`: the same characters in another order); bad prompts refused in words."""

from __future__ import annotations

import copy
import json

import pytest
import torch
from results import result

from attnlab.lessons.common.claims import status_of
from attnlab.lessons.common.params import ParamError
from attnlab.lessons.explain import as_dict
from attnlab.lessons.logit_lens import runs
from attnlab.train import progress

pytestmark = pytest.mark.slow  # trains the lesson's models

SMALL = dict(n_layers=2, train_steps=20, seed=1)


@pytest.fixture(scope="module")
def small():
    return result("logit-lens", lang="en", **SMALL)


def model_of(r):
    data = runs.corpus_data(r.params["corpus"])
    model, _ = runs.trained(data, r.params["n_layers"], r.params["train_steps"], r.params["seed"])
    ids = torch.tensor(data.tokenizer.encode(r.params["prompt"]))
    return model, ids, data.tokenizer


def test_json_has_the_lens_per_layer_and_position_and_the_answer_by_layer(small):
    d = json.loads(json.dumps(as_dict(small)))
    L, T = 2, len("床前明月")
    assert d["topic"] == "logit-lens" and d["n_layers"] == L and d["tokens"] == list("床前明月")
    assert len(d["lens_top"]) == L + 1 and all(len(row) == T for row in d["lens_top"])
    assert all(len(cell) == 3 and set(cell[0]) == {"token", "p"} for row in d["lens_top"] for cell in row)
    assert all(c[0]["p"] >= c[1]["p"] >= c[2]["p"] for row in d["lens_top"] for c in row)  # best first
    assert len(d["final_p"]) == L + 1 and all(len(row) == T for row in d["final_p"])
    assert len(d["answer_ranks"]) == len(d["answer_probs"]) == len(d["rows"]) == len(d["top_rows"]) == L + 1
    assert d["answer_ranks"][-1] == 1  # the answer is the model's own top token
    assert d["top_header"][1:] == d["tokens"] and all(len(row) == T + 1 for row in d["top_rows"])
    assert d["expected"] == "光" and d["answer"] == d["trained"]["answer"]
    assert d["continuation"]["answer"] == d["continuation_untrained"]["answer"] == "光"  # both read the same character
    assert {c["id"] for c in d["claims"]} == {"early", "sharpens"}
    assert {c["id"]: c["ok"] for c in d["checks"]} == {"last": True, "first": True}


def test_the_last_layer_is_the_models_own_output(small):
    model, ids, tok = model_of(small)
    with torch.no_grad():
        probs = model(ids[None])[0].softmax(-1)  # (T, vocab): the plain forward pass (fused attention)
    top_p, top_i = probs.max(-1)
    torch.testing.assert_close(torch.tensor(small.final_p[-1]), top_p, rtol=0, atol=1e-6)
    assert [row[0].token for row in small.lens_top[-1]] == [tok.token(int(i)) for i in top_i]
    assert small.answer == tok.token(int(top_i[-1]))
    assert small.answer_p == pytest.approx(float(top_p[-1]), abs=1e-6)
    assert small.checks[0].id == "last" and small.checks[0].max_diff < 1e-5


def test_each_layers_numbers_are_the_model_cut_after_that_many_blocks(small):
    model, ids, tok = model_of(small)
    answer = tok.encode(small.answer)[0]
    for layer in range(small.n_layers + 1):
        cut = copy.deepcopy(model)
        cut.blocks = cut.blocks[:layer]  # the same model stopped after `layer` blocks: its final LN and head kept
        with torch.no_grad():
            probs = cut(ids[None])[0].softmax(-1)  # (T, vocab)
        p = probs[-1, answer]
        assert small.answer_probs[layer] == pytest.approx(float(p), abs=1e-6)
        assert small.answer_ranks[layer] == 1 + int((probs[-1] > p).sum())  # 1 = top
        assert [c.token for c in small.lens_top[layer][-1]] == [tok.token(int(i)) for i in probs[-1].topk(3).indices]


def test_the_claims_show_at_the_defaults_and_redo_from_their_numbers():
    r = result("logit-lens")
    assert {c.id: c.status for c in r.claims} == {"early": "shown", "sharpens": "shown"}
    for c in r.claims:
        assert status_of(c.direction, c.measured, c.baseline, c.margin) == c.status
        assert c.control and c.margin > 0
    early, sharpens = r.claims
    c = r.continuation  # 光, what follows 床前明月 in the poem: the claims read it, not each model's own answer
    assert early.measured == c.spare == r.n_layers - c.settled and early.baseline == r.continuation_untrained.spare
    assert c.ranks[c.settled :] == [1] * (r.n_layers + 1 - c.settled) and c.ranks[c.settled - 1] > 1
    assert sharpens.measured == pytest.approx(c.probs[-1] - c.probs[0])


def test_the_continuation_read_where_it_is_not_on_top_is_never_settled():
    from attnlab.lessons.logit_lens.lesson import read

    r = result("logit-lens", train_steps=0, n_layers=2, seed=3)
    model, ids, tok = model_of(r)
    from attnlab.inspect import logit_lens

    lens = logit_lens(model, ids)  # (L+1, T, vocab)
    y = int(lens[-1, -1].argmin())  # the last choice at the end: not on top anywhere near it
    x = read(lens, tok, y)
    assert x.settled == 3 and x.spare == 0 and x.ranks[-1] == tok.vocab_size


def test_null_the_same_characters_shuffled_learn_no_continuation():
    from attnlab.lessons.logit_lens.lesson import NULLS

    data = runs.corpus_data("")
    text, shuffled = runs.stream_of(data, False, 0), runs.stream_of(data, True, 0)
    assert torch.equal(torch.bincount(text), torch.bincount(shuffled)) and not torch.equal(text, shuffled)
    assert {n.settings["shuffle"] for n in NULLS.values()} == {True}
    r = result("logit-lens", shuffle=True)  # the null at the defaults: a model as sure of its own answer ...
    assert r.trained.probs[-1] > 0.5 and r.trained.answer != "光"
    assert {c.id: c.status for c in r.claims} == {"early": "not_shown", "sharpens": "not_shown"}  # ... not of 光


def test_null_an_untrained_model_shows_neither_claim():
    r = result("logit-lens", n_layers=2, train_steps=0, seed=3)
    assert r.loss_first is None
    for c in r.claims:
        assert c.measured == c.baseline and c.status == "not_shown", c.id  # one model against itself: a tie
    assert r.trained == r.untrained


def test_bad_prompts_are_refused_in_words():
    with pytest.raises(ParamError) as empty:
        result("logit-lens", prompt="", **SMALL)
    assert empty.value.name == "prompt" and empty.value.key == "explain.error.text_empty"
    with pytest.raises(ParamError) as unknown:
        result("logit-lens", prompt="床前你好", **SMALL)
    assert unknown.value.name == "prompt" and "你好" in str(unknown.value)
    assert "你好" in unknown.value.localized("zh") and "静夜思" in unknown.value.localized("zh")
    with pytest.raises(ParamError, match="prompt"):
        result("logit-lens", prompt="床" * 33, **SMALL)  # longer than the context
    with pytest.raises(ParamError, match="corpus"):
        result("logit-lens", corpus="/no/such/file.txt", **SMALL)


def test_the_api_refuses_a_bad_prompt_with_422():
    from fastapi.testclient import TestClient

    from attnlab.web.app import create_app

    response = TestClient(create_app()).get("/api/explain/logit-lens", params={"prompt": "床前你好", **SMALL})
    assert response.status_code == 422 and "你好" in response.text


def test_a_corpus_file_trains_and_reports_progress(tmp_path):
    text = tmp_path / "lines.txt"
    text.write_text("白日依山尽，黄河入海流。欲穷千里目，更上一层楼。\n" * 3, encoding="utf-8")
    seen = progress.Progress()
    with progress.reporting(seen):
        r = result("logit-lens", corpus=str(text), prompt="欲穷千里", n_layers=1, train_steps=10, seed=7)
    assert seen.snapshot() == [{"name": "trained", "step": 10, "steps": 10}]
    assert r.corpus == "lines.txt" and r.expected == "目" and r.n_layers == 1
    with pytest.raises(ParamError) as missing:
        result("logit-lens", corpus=str(text), prompt="床前明月", n_layers=1, train_steps=10, seed=7)
    assert missing.value.name == "prompt" and "lines.txt" in str(missing.value)

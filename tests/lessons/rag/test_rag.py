"""The rag topic (issue 39, part 1): BM25 from SQLite FTS5's trigram index against rank_bm25's BM25Okapi, the index
built once on disk and rebuilt when the corpus changes, hostile index folders and queries refused in one line, the
generator's loss on the answer only, the claims at the defaults against a random poem in the context, a real
全唐诗 slice, and the --json contract (recall per condition, retrieval_recall per retriever and k)."""

from __future__ import annotations

import json
import os
import random

import pytest
import torch
import torch.nn.functional as F
from real_support import need
from results import explained, quick_flags, result
from shared_data import data_dir
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.lessons.common import poems as corpus
from attnlab.lessons.common import search_index as index
from attnlab.lessons.common.claims import SHOWN
from attnlab.lessons.common.params import ParamError
from attnlab.lessons.explain import TOPICS, explain
from attnlab.lessons.rag import generator
from attnlab.lessons.rag.lesson import CONDITIONS, KS

QUICK = TOPICS["rag"].quick


def test_bm25_is_rank_bm25s_okapi_over_the_same_trigrams():
    need("rank_bm25", "pip install rank-bm25")
    from rank_bm25 import BM25Okapi

    poems = corpus.builtin()
    docs = [p.text for p in poems]
    conn = index.open_index(docs, None)
    theirs = BM25Okapi([[d[i : i + 3] for i in range(len(d) - 2)] for d in docs], k1=1.2, b=0.75)
    rng = random.Random(0)
    for q in [poems[i].query for i in rng.sample(range(len(poems)), 20)] + [poems[3].text[2:12]]:
        ours = index.search(conn, q, 10)
        scores = theirs.get_scores(index.trigrams(q))
        assert ours and ours[0][0] == int(scores.argmax())
        for row, score in ours:
            assert score == pytest.approx(scores[row], rel=1e-6), (q, row)
    assert index.search(conn, "天地", 5) == []  # under three characters: no trigram to look up


def test_the_index_is_built_once_on_disk_and_rebuilt_when_the_corpus_changes(tmp_path):
    docs = [p.text for p in corpus.builtin()[:50]]
    conn = index.open_index(docs, tmp_path)
    files = list((tmp_path / index.SUBFOLDER).glob("*.sqlite"))
    assert len(files) == 1 and index.search(conn, docs[4][:5], 1)[0][0] == 4
    before = files[0].stat().st_mtime_ns
    index.open_index(docs, tmp_path)
    assert files[0].stat().st_mtime_ns == before  # read again, not rebuilt
    changed = docs[:-1] + ["春风又绿江南岸，明月何时照我还。春风又绿江南岸，明月何时照我还。"]
    conn = index.open_index(changed, tmp_path)
    assert len(list((tmp_path / index.SUBFOLDER).glob("*.sqlite"))) == 2
    assert index.search(conn, "江南岸", 1)[0][0] == 49
    assert not list((tmp_path / index.SUBFOLDER).glob(".*.tmp"))  # nothing half-written left behind


def test_a_fifo_or_a_link_where_the_index_goes_is_refused_in_one_line(tmp_path):
    docs = [p.text for p in corpus.builtin()[:10]]
    folder = tmp_path / index.SUBFOLDER
    folder.mkdir()
    os.mkfifo(folder / f"{index.digest(docs)}.sqlite")  # opening it would block forever
    with pytest.raises(index.IndexError_, match="not a plain file") as err:
        index.open_index(docs, tmp_path)
    assert "\n" not in str(err.value)
    other = tmp_path / "elsewhere"
    other.mkdir()
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / index.SUBFOLDER).symlink_to(other)  # a link out of the cache folder
    with pytest.raises(index.IndexError_, match="not a plain folder"):
        index.open_index(docs, linked)


def test_hostile_queries_and_corpora_get_one_clear_line(tmp_path):
    for query in ("床" * 10**6, "床前", "床前明月光疑"):
        with pytest.raises(ParamError) as err:
            explain("rag", query=query, **QUICK)
        assert err.value.name == "query" and "\n" not in str(err.value) and len(str(err.value)) < 300
    with pytest.raises(ParamError) as err:  # a name too long for the file system
        explain("rag", corpus="x" * 4096, **QUICK)
    assert err.value.name == "corpus" and len(str(err.value)) < 200
    fifo = tmp_path / "poems.txt"
    os.mkfifo(fifo)
    with pytest.raises(ParamError) as err:
        explain("rag", corpus=str(fifo), **QUICK)
    assert err.value.name == "corpus"
    few = tmp_path / "few.txt"
    few.write_text("床前明月光，疑是地上霜。\n举头望明月，低头思故乡。\n", encoding="utf-8")
    with pytest.raises(ParamError, match="need 40"):
        explain("rag", corpus=str(few), **QUICK)


def test_the_generator_learns_the_answer_only():
    poems = corpus.builtin()[:4]
    vocab = {c: i for i, c in enumerate(generator.vocabulary(corpus.builtin()))}
    model = generator.build(len(vocab), 0)
    ids = generator.encode(vocab, [p.text for p in poems], poems)  # (4, LENGTH)
    assert ids.shape == (4, generator.LENGTH)
    logits = model(ids[:, :-1])
    by_hand = F.cross_entropy(
        logits[:, generator.ANSWER - 1 :].reshape(-1, len(vocab)), ids[:, generator.ANSWER :].reshape(-1)
    )
    assert torch.allclose(generator.loss(model, ids), by_hand)
    chars = list(vocab)
    assert "".join(chars[i] for i in ids[0, generator.ANSWER :].tolist()) == poems[0].answer


@pytest.mark.slow  # trains
def test_quick_settings_keep_the_contract():
    r = result("rag", "en", **QUICK)
    assert r.conditions == list(CONDITIONS) and r.ks == list(KS)
    assert all(len(r.recall_by_seed[c]) == QUICK["seeds"] for c in CONDITIONS)
    assert r.retrieval_recall["bm25"][0] > 0.95  # a first line's trigrams find its poem among random ones
    ex = r.example
    assert len(ex.attention) == corpus.LINE and all(len(row) == generator.CONTEXT for row in ex.attention)
    assert all(0 <= sum(row) <= 1 + 1e-6 for row in ex.attention) and ex.bm25[0]["text"].startswith(ex.query)


@pytest.mark.slow  # trains
def test_at_the_defaults_retrieval_writes_lines_the_model_never_learnt():
    r = explained("rag", "en")
    assert {c.id: c.status for c in r.claims} == {"retrieval_helps": SHOWN, "bm25_finds": SHOWN}
    assert r.claims[0].null["name"] == "random"
    # the dense retriever is measured beside its null, untrained vectors, and claims nothing: it does not beat them
    assert r.retrieval_recall["dense_untrained"][-1] >= r.retrieval_recall["dense"][-1]
    assert min(r.recall_by_seed["retrieved"]) > 0.9 and max(r.recall_by_seed["random"]) < 0.05
    assert max(r.recall_by_seed["alone"]) < 0.05 and min(r.recall_by_seed["oracle"]) > 0.9
    ex = r.example  # it copies: the written line is the retrieved poem's second, where attention looks
    assert ex.written["retrieved"] == ex.answer
    looked = [max(range(generator.CONTEXT), key=row.__getitem__) for row in ex.attention]
    assert sum(ex.context[j] == ch for j, ch in zip(looked, ex.answer)) >= 3
    assert TOPICS["rag"].answer(r).option == "b"


@pytest.mark.slow  # trains
def test_a_real_tang_slice_indexes_and_retrieves():
    folder = data_dir() / "chinese-poetry" / "全唐诗"
    r = result("rag", "en", corpus=str(folder / "poet.tang.1*.simplified.json"), **QUICK)
    assert r.n_poems > 300 and r.retrieval_recall["bm25"][0] > 0.9


@pytest.mark.slow  # trains
def test_the_json_carries_recall_and_retrieval_recall():
    out = CliRunner().invoke(app, ["explain", "rag", *quick_flags("rag"), "--json", "--lang", "en"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)  # progress goes to stderr
    assert set(data["recall"]) == set(CONDITIONS) and set(data["retrieval_recall"]) == {
        "bm25",
        "dense",
        "dense_untrained",
    }
    assert all(len(v) == len(KS) for v in data["retrieval_recall"].values())
